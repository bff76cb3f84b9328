/**
 * The StarPO / StarPO-S update on one step's trajectories (SPEC.md §5-7): variance filtering of whole
 * env groups, a no-gradient pass (old and reference log-probs, token KL, critic values), group
 * normalisation and advantages (reinforce, grpo, agentic_reinforce, gae), then ppo_epochs passes over
 * shuffled minibatches with the actor loss (PPO / clip-higher / dual clip + k3 KL loss - entropy bonus)
 * and, for gae, the critic's clipped value loss, each with its own AdamW step.
 * Source: ROLL roll/pipeline/agentic/agentic_pipeline.py, roll/pipeline/base_worker.py (actor loss),
 * roll/pipeline/rlvr/actor_worker.py and critic_worker.py; RAGEN (StarPO-S).
 * Asynchronous rollouts (async_generation_ratio r > 0; staleness.ts, after ROLL's GroupQueue in
 * roll/distributed/scheduler/rollout_scheduler.py): groups more than r policy versions behind the update
 * are dropped first, and the old log-probs of stale trajectories are their sampling log-probs.
 */
import { ConfigError } from '../config/errors';
import type { RunConfig } from '../config/schema';
import { REWARD_GROUPINGS, TRAJECTORY_GROUP_FIELDS } from '../config/schema_blocks';
import type { Trajectory } from '../rollout/types';
import type { Qwen2 } from '../model/qwen2';
import type { ValueModel } from '../model/value_model';
import { Rng } from '../util/rng';
import type { AdamW } from './adamw';
import { computeAdvantages } from './advantages';
import { resolveNormTypes } from './normalize';
import { paddedLength, shiftedArrays } from './batch';
import { optimizerStep, StepResult } from './grad_step';
import { filterGroups } from './filter';
import { actorLossFns, criticLossFns, StatAccumulator, type UpdateRows } from './minibatch_losses';
import { prepass } from './prepass';
import { dropStale, oldLogpRows, stalenessOf } from './staleness';
import type { KlController } from './kl';
import { trajectoryScores, type TrajectoryScoresFile } from './trajectory_scores';

/**
 * The key of a trajectory's normalisation group for reward_normalization.grouping (SPEC.md §5.1).
 * @throws ConfigError for a grouping outside REWARD_GROUPINGS (config/schema_blocks.ts)
 */
export function groupKeyOf(t: Trajectory, grouping: string): string {
  if (grouping === 'batch') return 'batch';
  if (grouping === 'traj_group_id') return t.trajGroupId;
  if (grouping === 'tags') return t.tag;
  const field = TRAJECTORY_GROUP_FIELDS.find((f) => f === grouping);
  if (field === undefined) {
    // The schema only lets REWARD_GROUPINGS through; a ConfigError is never retried (the workflow's nonRetryableErrorTypes).
    throw new ConfigError('run config', [`reward_normalization.grouping: ${JSON.stringify(grouping)} is not a trajectory field (allowed: ${REWARD_GROUPINGS.join(', ')})`]);
  }
  return String(t[field]);
}

/** True when a KL term needs the frozen reference policy (SPEC.md §2: use_kl_loss, or add_token_level_kl with beta > 0). */
export function needsReference(config: RunConfig): boolean {
  return config.use_kl_loss || (config.add_token_level_kl && config.init_kl_coef > 0);
}

/** A trainable model with its optimizer and learning rate by optimizer step k = 0, 1, ... of this update. */
export interface Trainee<M> {
  model: M;
  optimizer: AdamW;
  lr: (k: number) => number;
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

/** Result of ppoUpdate. */
export interface PpoUpdateResult {
  /**
   * actor/*, critic/*, rollout/* (filtering), time/update/* (seconds); ROLL names (SPEC.md §6-7). With
   * async_generation_ratio > 0 also rollout/staleness/mean|max and rollout/discarded_stale (staleness.ts).
   */
  metrics: Record<string, number>;
  /** Why no optimizer step ran (nothing survived the filter), or null. */
  skipReason: string | null;
  /** Per trajectory (by trajId): kept by the filter, normalised score, mean token advantage (trajectory_scores.ts). */
  scores: TrajectoryScoresFile;
}

/**
 * Runs the update in place on the actor (and critic).
 * @param critic required when adv_estimator is gae
 * @param reference frozen reference policy; required when needsReference(config)
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
  if (needsReference(config) && !opts.reference) throw new Error('ppoUpdate: a KL term is on (use_kl_loss or add_token_level_kl) but no reference policy was given');
  const started = performance.now();
  // Asynchronous rollouts: drop the groups older than the ratio allows (a no-op when r = 0, which adds no metrics).
  const asyncRatio = config.async_generation_ratio;
  const fresh = asyncRatio > 0 ? dropStale(opts.trajectories, opts.step, asyncRatio) : { kept: opts.trajectories, metrics: {} };
  const received = fresh.kept;
  const trajIds = received.map((t) => t.trajId);
  const skip = (reason: string, metrics: Record<string, number>): PpoUpdateResult => ({
    metrics: { ...metrics, ...fresh.metrics, 'actor/update_skipped': 1 }, skipReason: reason,
    scores: trajectoryScores({ step: opts.step, trajIds, keep: [], normalizedScores: [], advantages: [], mask: [], skipReason: reason }),
  });
  if (received.length === 0) return skip(`all ${opts.trajectories.length} trajectories are more than async_generation_ratio (${asyncRatio}) policy versions old`, {});
  const filter = filterGroups({
    scores: received.map((t) => t.episodeScore), groupKeys: received.map((t) => t.trajGroupId),
    type: config.rollout_filter_type, ratio: config.rollout_filter_ratio,
  });
  if (filter.skipReason) return skip(filter.skipReason, filter.metrics);
  const trajectories = filter.keep.map((i) => received[i]);
  const B = trajectories.length;
  const args = config.actor_train.training_args;
  const microSize = args.per_device_train_batch_size;
  const miniSize = Math.ceil(B / minibatchesPerEpoch(config));
  // One shifted slot past the longest trajectory's last token: GAE reads every trajectory's value after its last
  // token there, as ROLL does for every trajectory shorter than the sequence_length it pads to.
  const T = paddedLength(trajectories);
  const full = shiftedArrays(trajectories, T + 1);
  // Stale trajectories (sampled by an older policy) take their sampling log-probs as old log-probs; the
  // current policy's are computed for the others when the ratio can move off 1 during the update.
  const stale = trajectories.map((t) => stalenessOf(t, opts.step) > 0);
  const allStale = stale.every(Boolean);
  const recomputeOld = (!allStale && (config.ppo_epochs > 1 || Math.ceil(B / miniSize) > 1 || stale.some(Boolean))) || !!opts.reference;
  const pre = await prepass({
    actor: actor.model, reference: opts.reference, critic: gae ? critic!.model : null, trajectories, T, padId: opts.padId,
    microSize, oldLogp: recomputeOld, klPenalty: config.kl_penalty, afterMicroBatch: opts.afterMicroBatch,
  });
  const prepassSeconds = (performance.now() - started) / 1000;
  const oldLogp = stale.some(Boolean) ? oldLogpRows(stale, full.sampleLogprobs, pre.oldLogp) : pre.oldLogp;
  // The KL is measured whenever a reference is loaded; it enters the rewards only with add_token_level_kl.
  const klInRewards = config.add_token_level_kl && !!pre.tokenKl;
  const adv = computeAdvantages({
    scores: trajectories.map((t) => t.episodeScore),
    groupKeys: trajectories.map((t) => groupKeyOf(t, config.reward_normalization.grouping)),
    mask: full.mask, lastIndex: full.lastIndex,
    norm: resolveNormTypes(config.reward_normalization), gamma: config.gamma, lambd: config.lambd, whiten: config.whiten_advantages,
    rewardClip: config.reward_clip, advantageClip: config.advantage_clip, advEstimator: config.adv_estimator,
    values: pre.values ?? undefined, tokenKl: pre.tokenKl ?? undefined, klCoef: klInRewards ? opts.klController.value : undefined,
    slotsPerTrajectory: config.sequence_length - 1,
  });

  const trainActor = !gae || opts.step >= config.critic_warmup;
  const rows: UpdateRows = {
    trajectories, padId: opts.padId, mask: full.mask, advantages: adv.advantages, oldLogp, refLogp: pre.refLogp,
    values: pre.values, returns: adv.returns,
  };
  const stats = { actor: new StatAccumulator(), critic: new StatAccumulator() };
  const steps = { actor: [] as StepResult[], critic: [] as StepResult[] };

  for (let epoch = 0; epoch < config.ppo_epochs; epoch++) {
    const order = new Rng(config.seed, 'minibatch', opts.step, epoch).shuffle([...Array(B).keys()]);
    for (let start = 0; start < B; start += miniSize) {
      const minibatch = order.slice(start, start + miniSize);
      if (trainActor) {
        steps.actor.push(await optimizerStep({
          vars: actor.model.trainableVariables(), optimizer: actor.optimizer, lr: actor.lr(steps.actor.length),
          lossFns: actorLossFns(actor.model, rows, minibatch, microSize, config, stats.actor),
          maxGradNorm: config.max_grad_norm, afterMicroBatch: opts.afterMicroBatch,
        }));
      }
      // ROLL's critic worker makes one pass over the batch whatever ppo_epochs is.
      if (gae && epoch === 0) {
        steps.critic.push(await optimizerStep({
          vars: critic!.model.trainableVariables(), optimizer: critic!.optimizer, lr: critic!.lr(steps.critic.length),
          lossFns: criticLossFns(critic!.model, rows, minibatch, microSize, config, stats.critic),
          maxGradNorm: config.max_grad_norm, afterMicroBatch: opts.afterMicroBatch,
        }));
      }
    }
  }
  if (klInRewards) opts.klController.update(adv.metrics['critic/kl'], B);

  const metrics: Record<string, number> = {
    ...fresh.metrics, ...filter.metrics, ...adv.metrics,
    ...stats.actor.result(steps.actor.length), ...stats.critic.result(steps.critic.length),
  };
  Object.assign(metrics, stepMetrics('actor', steps.actor, actor.lr(0)), gae ? stepMetrics('critic', steps.critic, critic!.lr(0)) : {});
  const all = [...steps.actor, ...steps.critic];
  metrics['time/update/prepass'] = prepassSeconds;
  for (const part of ['forward', 'backward', 'optimizer'] as const) {
    metrics[`time/update/${part}`] = all.reduce((s, r) => s + r.seconds[part], 0);
  }
  const scores = trajectoryScores({ step: opts.step, trajIds, keep: filter.keep, normalizedScores: adv.normalizedScores, advantages: adv.advantages, mask: full.mask });
  return { metrics, skipReason: null, scores };
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
