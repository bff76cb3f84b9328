/**
 * One StarPO / StarPO-S update on a step's trajectories, read top to bottom: staleness -> filter -> no-gradient pass
 * -> scores -> advantages -> ppo_epochs x minibatches -> loss -> metrics. § are sections of docs/numerics.md ("One
 * update, in order"). Source: ROLL roll/pipeline/agentic/agentic_pipeline.py, the agentic actor worker's and the
 * critic worker's loss_func; RAGEN (StarPO-S).
 */
import * as tf from '@tensorflow/tfjs';
import type { RunConfig, Trajectory } from '../contract';
import { ConfigError, gradientCheckpointing, REWARD_GROUPINGS, TRAJECTORY_GROUP_FIELDS } from '../contract';
import type { TrajectoryScoresFile } from '../contract/trajectory_scores';
import { tokenLogProbs } from '../model/logprobs';
import type { Qwen2 } from '../model/qwen2';
import type { ValueModel } from '../model/value_model';
import { shiftedArrays } from '../rollout/packing';
import { deriveSeed, Rng } from '../util/rng';
import type { AdamW } from './adamw';
import { computeAdvantages } from './advantages';
import { paddedLength } from './batch';
import { collapseDetectionDue, collapseDiagnostics } from './collapse_detection';
import { filterGroups, filterOptions } from './filter';
import { filterLossScale } from './filter_strategies';
import { type MicroBatchLoss, optimizerStep, type StepResult } from './grad_step';
import type { KlController } from './kl';
import { aggDenominators, aggLoss, entropyBonus, klLoss, PPO_STATS, ppoLoss, StatAccumulator, VALUE_STATS, valueLoss } from './loss';
import { microBatchLosses, noGradPass, type UpdateRows } from './micro_batches';
import { normalizeScores, resolveNormTypes } from './normalize';
import { dropStale, oldLogpRows, stalenessOf } from './staleness';
import { trajectoryScores } from './trajectory_scores';

/** True when a KL term needs the frozen reference policy (use_kl_loss, or add_token_level_kl with beta > 0). */
export function needsReference(config: RunConfig): boolean {
  return config.use_kl_loss || (config.add_token_level_kl && config.init_kl_coef > 0);
}

/**
 * Minibatches per epoch: rollout_batch_size / (per_device_train_batch_size * gradient_accumulation_steps),
 * rounded up. The StarPO-S filter shrinks the minibatches, not their number.
 */
export function minibatchesPerEpoch(config: RunConfig): number {
  const args = config.actor_train.training_args;
  return Math.max(1, Math.ceil(config.rollout_batch_size / (args.per_device_train_batch_size * args.gradient_accumulation_steps)));
}

/**
 * Optimizer steps of one update (ppo_epochs x minibatches per epoch): the unit of the lr schedule, as in
 * ROLL, where actor_train.training_args.max_steps = max_steps x this and warmup_steps counts optimizer steps.
 */
export function optimizerStepsPerUpdate(config: RunConfig): number {
  return config.ppo_epochs * minibatchesPerEpoch(config);
}

/** Critic optimizer steps of one update: one pass over the batch, as ROLL's critic worker makes whatever ppo_epochs is. */
export function criticStepsPerUpdate(config: RunConfig): number {
  return minibatchesPerEpoch(config);
}

/**
 * The key of a trajectory's normalisation group for reward_normalization.grouping (§5.1).
 * @throws ConfigError for a grouping outside REWARD_GROUPINGS
 */
export function groupKeyOf(t: Trajectory, grouping: string): string {
  if (grouping === 'batch') return 'batch';
  if (grouping === 'traj_group_id') return t.trajGroupId;
  if (grouping === 'tags') return t.tag;
  const field = TRAJECTORY_GROUP_FIELDS.find((f) => f === grouping);
  if (field === undefined) {
    // The schema only lets REWARD_GROUPINGS through; a ConfigError is never retried (the workflow's nonRetryableErrorTypes).
    throw new ConfigError('run config', [
      `reward_normalization.grouping: ${JSON.stringify(grouping)} is not a trajectory field (allowed: ${REWARD_GROUPINGS.join(', ')})`,
    ]);
  }
  return String(t[field]);
}

/** A trainable model with its optimizer and learning rate by optimizer step k = 0, 1, ... of this update. */
export interface Trainee<M> {
  model: M;
  optimizer: AdamW;
  lr: (k: number) => number;
}

/** Result of ppoUpdate. */
export interface PpoUpdateResult {
  /**
   * actor/*, critic/*, rollout/* (filtering), time/update/* (seconds); ROLL names (§6-7). With
   * async_generation_ratio > 0 also rollout/staleness/mean|max and rollout/discarded_stale (staleness.ts).
   */
  metrics: Record<string, number>;
  /** Why no optimizer step ran (nothing survived the filter), or null. */
  skipReason: string | null;
  /** Per trajectory (by trajId): kept by the filter, normalised score, mean token advantage (trajectoryScores). */
  scores: TrajectoryScoresFile;
}

/**
 * Runs the update in place on the actor (and critic).
 * @param critic required when adv_estimator is gae
 * @param reference frozen reference policy; required when needsReference(config). Read only before the first
 *   optimizer step (the no-gradient pass), so it may be the actor itself while their weights are the same (step 0)
 * @param klController beta of the token-level KL (add_token_level_kl); updated here with the batch KL
 * @param afterMicroBatch awaited between micro-batches (heartbeats)
 * @throws ConfigError for an unknown grouping field; Error for a missing critic / reference
 */
export async function ppoUpdate(opts: {
  actor: Trainee<Qwen2>;
  critic?: Trainee<ValueModel> | null;
  reference?: Qwen2 | null;
  klController: KlController;
  trajectories: Trajectory[];
  config: RunConfig;
  step: number;
  padId: number;
  afterMicroBatch?: () => Promise<void>;
}): Promise<PpoUpdateResult> {
  const { config, actor, critic } = opts;
  const gae = config.adv_estimator === 'gae';
  if (gae && !critic) throw new Error('ppoUpdate: adv_estimator gae needs a critic');
  if (needsReference(config) && !opts.reference)
    throw new Error('ppoUpdate: a KL term is on (use_kl_loss or add_token_level_kl) but no reference policy was given');
  const started = performance.now();

  // 1. Staleness (async_generation_ratio r > 0; staleness.ts, after ROLL's GroupQueue): drop the groups sampled
  //    more than r policy versions ago. A no-op when r = 0, which adds no metrics.
  const asyncRatio = config.async_generation_ratio;
  const fresh = asyncRatio > 0 ? dropStale(opts.trajectories, opts.step, asyncRatio) : { kept: opts.trajectories, metrics: {} };
  const received = fresh.kept;
  const trajIds = received.map((t) => t.trajId);
  const skip = (reason: string, metrics: Record<string, number>): PpoUpdateResult => ({
    metrics: { ...metrics, ...fresh.metrics, 'actor/update_skipped': 1 },
    skipReason: reason,
    scores: trajectoryScores({ step: opts.step, trajIds, keep: [], normalizedScores: [], advantages: [], mask: [], skipReason: reason }),
  });
  if (received.length === 0)
    return skip(
      `all ${opts.trajectories.length} trajectories are more than async_generation_ratio (${asyncRatio}) policy versions old`,
      {},
    );

  // RAGEN-2's collapse diagnostics (§7) on the batch as played, before the filter.
  const diagnostics = collapseDetectionDue(config.collapse_detection, opts.step)
    ? await collapseDiagnostics(actor.model, received, config, opts.step, opts.padId, opts.afterMicroBatch)
    : {};

  // 2. StarPO-S variance filter (§7): keep whole env groups by the std of their raw episode scores.
  const filter = filterGroups(filterOptions(config, received));
  if (filter.skipReason) return skip(filter.skipReason, { ...diagnostics, ...filter.metrics });
  const trajectories = filter.keep.map((i) => received[i]);
  const B = trajectories.length;
  const microSize = config.actor_train.training_args.per_device_train_batch_size;
  const miniSize = Math.ceil(B / minibatchesPerEpoch(config));
  // The shifted arrays reach one slot past the longest trajectory's last token: GAE reads every trajectory's value
  // after its last token there, as ROLL does for every trajectory shorter than the sequence_length it pads to.
  const T = paddedLength(trajectories);
  const full = shiftedArrays(trajectories, T + 1);

  // 3. No-gradient pass (§5.2, §5.3, §6), only for what is on: old log-probs (when the ratio can move off 1 during the
  //    update), reference log-probs and the token KL (a reference is loaded), the critic's values (gae). Stale
  //    trajectories take their sampling log-probs as old log-probs: the current weights cannot recompute them.
  const stale = trajectories.map((t) => stalenessOf(t, opts.step) > 0);
  const allStale = stale.every(Boolean);
  const recomputeOld = (!allStale && (config.ppo_epochs > 1 || Math.ceil(B / miniSize) > 1 || stale.some(Boolean))) || !!opts.reference;
  const pre = await noGradPass({
    actor: actor.model,
    reference: opts.reference,
    critic: gae ? critic!.model : null,
    trajectories,
    T,
    padId: opts.padId,
    microSize,
    oldLogp: recomputeOld,
    klPenalty: config.kl_penalty,
    afterMicroBatch: opts.afterMicroBatch,
  });
  const prepassSeconds = (performance.now() - started) / 1000;
  const oldLogp = stale.some(Boolean) ? oldLogpRows(stale, full.sampleLogprobs, pre.oldLogp) : pre.oldLogp;

  // 4. Scores (§5.1): each trajectory's episode score, normalised within its group (reward_normalization.grouping;
  //    the mean and std of norm_mean_type / norm_std_type, or of the deprecated method).
  const scores = trajectories.map((t) => t.episodeScore);
  const groupKeys = trajectories.map((t) => groupKeyOf(t, config.reward_normalization.grouping));
  const normScores = normalizeScores(scores, groupKeys, resolveNormTypes(config.reward_normalization));

  // 5. Advantages (§5.1 reward_clip to §5.5): the normalised score on the last sampled token, minus beta * KL with
  //    add_token_level_kl (the KL is measured whenever a reference is loaded), then the estimator (reinforce, grpo,
  //    agentic_reinforce, gae with the critic's values), whitening and advantage_clip.
  const klInRewards = config.add_token_level_kl && !!pre.tokenKl;
  const adv = computeAdvantages({
    scores,
    normScores,
    mask: full.mask,
    lastIndex: full.lastIndex,
    gamma: config.gamma,
    lambd: config.lambd,
    whiten: config.whiten_advantages,
    rewardClip: config.reward_clip,
    advantageClip: config.advantage_clip,
    advEstimator: config.adv_estimator,
    values: pre.values ?? undefined,
    tokenKl: pre.tokenKl ?? undefined,
    klCoef: klInRewards ? opts.klController.value : undefined,
    slotsPerTrajectory: config.sequence_length - 1,
  });
  // filter_loss_scaling (RAGEN-2): the advantages shrink with the fraction of groups kept, as RAGEN scales them after computing them.
  const lossScale = filterLossScale(config.filter_loss_scaling, filter.metrics['rollout/filter_kept_ratio']);
  if (lossScale !== 1) for (const row of adv.advantages) for (let j = 0; j < row.length; j++) row[j] *= lossScale;

  // 6. ppo_epochs x minibatches (§6), shuffled with a seed; each minibatch is one optimizer step of the actor (once
  //    step >= critic_warmup for gae) and, in the first epoch only as ROLL's critic worker, of the critic.
  const trainActor = !gae || opts.step >= config.critic_warmup;
  const rows: UpdateRows = {
    trajectories,
    padId: opts.padId,
    mask: full.mask,
    advantages: adv.advantages,
    oldLogp,
    refLogp: pre.refLogp,
    values: pre.values,
    returns: adv.returns,
  };
  const stats = { actor: new StatAccumulator(), critic: new StatAccumulator() };
  const steps = { actor: [] as StepResult[], critic: [] as StepResult[] };
  for (let epoch = 0; epoch < config.ppo_epochs; epoch++) {
    const order = new Rng(config.seed, 'minibatch', opts.step, epoch).shuffle([...Array(B).keys()]);
    for (let start = 0; start < B; start += miniSize) {
      const minibatch = order.slice(start, start + miniSize);
      if (trainActor) {
        steps.actor.push(
          await optimizerStep({
            vars: actor.model.trainableVariables(),
            optimizer: actor.optimizer,
            lr: actor.lr(steps.actor.length),
            lossFns: actorLossFns(
              actor.model,
              rows,
              minibatch,
              microSize,
              config,
              stats.actor,
              deriveSeed(config.seed, 'lora-dropout', opts.step, epoch, start),
            ),
            maxGradNorm: config.max_grad_norm,
            afterMicroBatch: opts.afterMicroBatch,
          }),
        );
      }
      if (gae && epoch === 0) {
        steps.critic.push(
          await optimizerStep({
            vars: critic!.model.trainableVariables(),
            optimizer: critic!.optimizer,
            lr: critic!.lr(steps.critic.length),
            lossFns: criticLossFns(critic!.model, rows, minibatch, microSize, config, stats.critic),
            maxGradNorm: config.max_grad_norm,
            afterMicroBatch: opts.afterMicroBatch,
          }),
        );
      }
    }
  }
  if (klInRewards) opts.klController.update(adv.metrics['critic/kl'], B);

  // 7. Metrics (§6-7, ROLL's names) and what the update did with each trajectory (trajectoryScores).
  const metrics: Record<string, number> = {
    ...fresh.metrics,
    ...diagnostics,
    ...filter.metrics,
    ...adv.metrics,
    ...stats.actor.result(steps.actor.length),
    ...stats.critic.result(steps.critic.length),
  };
  Object.assign(metrics, stepMetrics('actor', steps.actor, actor.lr(0)), gae ? stepMetrics('critic', steps.critic, critic!.lr(0)) : {});
  const all = [...steps.actor, ...steps.critic];
  metrics['time/update/prepass'] = prepassSeconds;
  for (const part of ['forward', 'backward', 'optimizer'] as const) {
    metrics[`time/update/${part}`] = all.reduce((s, r) => s + r.seconds[part], 0);
  }
  const stored = trajectoryScores({
    step: opts.step,
    trajIds,
    keep: filter.keep,
    normalizedScores: adv.normalizedScores,
    advantages: adv.advantages,
    mask: full.mask,
  });
  return { metrics, skipReason: null, scores: stored };
}

/**
 * The actor's loss of one minibatch (§6) as micro-batch shares (ROLL's strategies' train_step: every micro-batch
 * aggregates with the whole minibatch's denominators, so neither the loss nor its gradient depends on
 * per_device_train_batch_size): pg (ppoLoss: PPO / clip-higher / dual clip) + kl_loss_coef * k3 KL loss (use_kl_loss)
 * - entropy_loss_coef * entropy, each aggregated with loss_agg_mode (seq-mean-token-sum-norm divides by
 * sequence_length - 1, the length ROLL pads to). Adds PPO_STATS, actor/entropy (token-mean), actor/kl_loss and
 * actor/total_loss to `stats`.
 * @param minibatch row indices into `rows`; @param microSize per_device_train_batch_size
 * @param dropoutSeed the seed of the LoRA adapters' dropout masks of this minibatch (one stream per micro-batch)
 */
export function actorLossFns(
  model: Qwen2,
  rows: UpdateRows,
  minibatch: readonly number[],
  microSize: number,
  config: RunConfig,
  stats: StatAccumulator,
  dropoutSeed: number,
): MicroBatchLoss[] {
  const denom = aggDenominators(
    minibatch.map((i) => rows.mask[i]),
    config.sequence_length - 1,
  );
  const mode = config.loss_agg_mode;
  const opts = { entropyGradient: config.entropy_loss_coef > 0, gradientCheckpointing: gradientCheckpointing(config.actor_train) };
  return microBatchLosses(rows, minibatch, microSize, ({ index, ids, attentionMask, mask, pick }) => {
    // Every term of the loss and its stats is masked by the response mask: the vocabulary work runs only there.
    const { logp, entropy } = tokenLogProbs(model, ids, attentionMask, {
      at: mask,
      ...opts,
      loraDropoutSeed: deriveSeed(dropoutSeed, index),
    });
    const old = rows.oldLogp ? pick(rows.oldLogp) : tf.tensor2d(logp.dataSync() as Float32Array, logp.shape);
    const pg = ppoLoss(
      { logp, oldLogp: old, advantages: pick(rows.advantages), mask },
      {
        pgClip: config.pg_clip,
        usePgClipRange: config.use_pg_clip_range,
        pgClipLow: config.pg_clip_low,
        pgClipHigh: config.pg_clip_high,
        dualClip: config.dual_clip_loss,
        lossAggMode: mode,
      },
      denom,
    );
    stats.add(pg.stats(), PPO_STATS);
    stats.add({ 'actor/entropy': aggLoss(entropy, mask, 'token-mean', denom).dataSync()[0] });
    let loss: tf.Scalar = pg.loss;
    if (config.use_kl_loss) {
      const kl = klLoss(logp, pick(rows.refLogp!), mask, mode, denom);
      stats.add({ 'actor/kl_loss': kl.dataSync()[0] });
      loss = tf.add(loss, tf.mul(kl, config.kl_loss_coef));
    }
    if (config.entropy_loss_coef > 0) loss = tf.sub(loss, tf.mul(entropyBonus(entropy, mask, mode, denom), config.entropy_loss_coef));
    stats.add({ 'actor/total_loss': loss.dataSync()[0] });
    return loss;
  });
}

/**
 * The critic's loss of one minibatch as micro-batch shares: valueLoss (0.5 x the row mean of the clipped squared
 * error, whatever loss_agg_mode) with the minibatch's row count as divisor. Adds VALUE_STATS to `stats`.
 * @param minibatch row indices into `rows` (rows.values required); @param microSize per_device_train_batch_size
 */
export function criticLossFns(
  model: ValueModel,
  rows: UpdateRows,
  minibatch: readonly number[],
  microSize: number,
  config: RunConfig,
  stats: StatAccumulator,
): MicroBatchLoss[] {
  return microBatchLosses(rows, minibatch, microSize, ({ ids, attentionMask, mask, pick }) => {
    const [b, L] = ids.shape;
    const values = tf.slice(model.values(ids, attentionMask), [0, 0], [b, L - 1]) as tf.Tensor2D;
    const vf = valueLoss({
      values,
      oldValues: pick(rows.values!),
      returns: pick(rows.returns),
      mask,
      valueClip: config.value_clip,
      rows: minibatch.length,
    });
    stats.add(vf.stats(), VALUE_STATS);
    return vf.loss;
  });
}

/** {role}/grad_norm (mean before clipping), {role}/lr (at the update's first optimizer step), {role}/optimizer_steps, {role}/skipped_nonfinite. */
function stepMetrics(role: 'actor' | 'critic', results: StepResult[], lr: number): Record<string, number> {
  const n = results.length;
  return {
    [`${role}/grad_norm`]: n > 0 ? results.reduce((s, r) => s + r.gradNorm, 0) / n : 0,
    [`${role}/grad_norm_max`]: n > 0 ? Math.max(...results.map((r) => r.gradNorm)) : 0,
    [`${role}/lr`]: lr,
    [`${role}/optimizer_steps`]: results.filter((r) => r.applied).length,
    [`${role}/skipped_nonfinite`]: results.filter((r) => !r.applied).length,
  };
}
