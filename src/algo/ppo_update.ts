/**
 * The StarPO policy update on one step's trajectories (SPEC.md §5-6): episode scores -> group
 * normalisation -> reinforce advantages -> PPO clip loss -> AdamW, for ppo_epochs passes over
 * minibatches of per_device_train_batch_size * gradient_accumulation_steps trajectories.
 * Source: ROLL roll/pipeline/agentic/agentic_pipeline.py and roll/pipeline/base_worker.py (actor loss).
 */
import * as tf from '@tensorflow/tfjs';
import type { RunConfig } from '../config/schema';
import type { Trajectory } from '../rollout/types';
import type { Qwen2 } from '../model/qwen2';
import { tokenLogProbs } from '../model/logprobs';
import { Rng } from '../util/rng';
import type { AdamW } from './adamw';
import { computeAdvantages } from './advantages';
import { maskedMean, ppoLoss } from './loss';
import { lengthBucketedMicroBatches, packBatch, paddedLength, shiftedArrays } from './batch';
import { optimizerStep } from './grad_step';

/** The key of a trajectory's normalisation group for reward_normalization.grouping (SPEC.md §5.1). */
export function groupKeyOf(t: Trajectory, grouping: string): string {
  if (grouping === 'batch') return 'batch';
  if (grouping === 'traj_group_id') return t.trajGroupId;
  if (grouping === 'tags') return t.tag;
  const value = (t as unknown as Record<string, unknown>)[grouping];
  if (value === undefined) {
    throw new Error(`reward_normalization.grouping: ${JSON.stringify(grouping)} is not a trajectory field (allowed: batch, traj_group_id, tags, tag, groupId, seed, envId)`);
  }
  return String(value);
}

/**
 * Runs the update and returns actor/* and critic/* metrics (ROLL names; SPEC.md §6).
 * @param lr learning rate of this pipeline step (after the schedule)
 * @param afterMicroBatch awaited between micro-batches (heartbeats)
 * @throws Error for an unknown grouping field
 */
export async function ppoUpdate(opts: {
  model: Qwen2;
  optimizer: AdamW;
  trajectories: Trajectory[];
  config: RunConfig;
  step: number;
  padId: number;
  lr: number;
  afterMicroBatch?: () => Promise<void>;
}): Promise<Record<string, number>> {
  const { model, config, trajectories } = opts;
  const args = config.actor_train.training_args;
  const B = trajectories.length;
  const full = shiftedArrays(trajectories, paddedLength(trajectories));
  const adv = computeAdvantages({
    scores: trajectories.map((t) => t.episodeScore),
    groupKeys: trajectories.map((t) => groupKeyOf(t, config.reward_normalization.grouping)),
    mask: full.mask, lastIndex: full.lastIndex,
    method: config.reward_normalization.method, gamma: config.gamma, whiten: config.whiten_advantages,
    rewardClip: config.reward_clip, advantageClip: config.advantage_clip, advEstimator: config.adv_estimator,
  });
  const lengths = trajectories.map((t) => t.inputIds.length);
  const microSize = args.per_device_train_batch_size;
  const miniSize = Math.min(B, microSize * args.gradient_accumulation_steps);
  const vars = opts.model.trainableVariables();
  const sums: Record<string, number> = {};
  const add = (k: string, v: number) => (sums[k] = (sums[k] ?? 0) + v);
  let microCount = 0;
  let optimizerSteps = 0;
  let skipped = 0;
  let gradNormSum = 0;

  for (let epoch = 0; epoch < config.ppo_epochs; epoch++) {
    const order = new Rng(config.seed, 'minibatch', opts.step, epoch).shuffle([...Array(B).keys()]);
    for (let start = 0; start < B; start += miniSize) {
      const micro = lengthBucketedMicroBatches(order.slice(start, start + miniSize), lengths, microSize);
      const lossFns = micro.map((idx) => () => {
        const batch = packBatch(idx.map((i) => trajectories[i]), opts.padId);
        const T = batch.mask[0].length;
        const pick = (rows: number[][]) => tf.tensor2d(idx.map((i) => rows[i].slice(0, T)), [idx.length, T]);
        const { logp, entropy } = tokenLogProbs(model, batch.ids, batch.attentionMask);
        const mask = tf.tensor2d(batch.mask, [idx.length, T]);
        // Old log-probs: the rollout-time ones when a minibatch follows an earlier optimizer step in this
        // update (ppo_epochs > 1 or several minibatches); otherwise the detached current ones (ratio 1).
        const oldLogp = optimizerSteps === 0
          ? tf.tensor2d(logp.dataSync() as Float32Array, [idx.length, T]) // a constant copy: no gradient
          : tf.tensor2d(batch.sampleLogprobs, [idx.length, T]);
        const result = ppoLoss(
          { logp, oldLogp, advantages: pick(adv.advantages), mask },
          { pgClip: config.pg_clip, lossAggMode: config.loss_agg_mode },
        );
        for (const [k, v] of Object.entries(result.stats())) add(k, v);
        add('actor/entropy', maskedMean(entropy, mask).dataSync()[0]);
        microCount += 1;
        batch.ids.dispose();
        batch.attentionMask.dispose();
        return tf.div(result.loss, micro.length) as tf.Scalar;
      });
      const res = await optimizerStep({
        vars, optimizer: opts.optimizer, lossFns, lr: opts.lr, maxGradNorm: config.max_grad_norm,
        afterMicroBatch: opts.afterMicroBatch,
      });
      optimizerSteps += 1;
      gradNormSum += res.gradNorm;
      if (!res.applied) skipped += 1;
    }
  }
  const metrics: Record<string, number> = {};
  for (const [k, v] of Object.entries(sums)) metrics[k] = v / microCount;
  return {
    ...metrics, ...adv.metrics,
    'actor/grad_norm': gradNormSum / optimizerSteps,
    'actor/lr': opts.lr,
    'actor/optimizer_steps': optimizerSteps - skipped,
    'actor/skipped_nonfinite': skipped,
  };
}
