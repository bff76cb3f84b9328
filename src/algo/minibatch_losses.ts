/**
 * One minibatch's losses as micro-batch shares (SPEC.md §6; ROLL roll/distributed/strategy/*.py train_step with
 * _get_batch_num_tokens / _get_global_valid_samples and apply_loss_scale): every micro-batch aggregates with the whole
 * minibatch's denominators, so the shares add up to the loss of the minibatch taken at once, and neither the loss nor
 * its gradient depends on per_device_train_batch_size. The optimizer step (grad_step.ts) sums the shares' gradients.
 */
import * as tf from '@tensorflow/tfjs';
import type { RunConfig } from '../config/schema';
import type { Qwen2 } from '../model/qwen2';
import type { ValueModel } from '../model/value_model';
import { tokenLogProbs } from '../model/logprobs';
import type { Trajectory } from '../rollout/types';
import { lengthBucketedMicroBatches, packBatch } from './batch';
import {
  aggDenominators, aggLoss, entropyBonus, klLoss, ppoLoss, valueLoss, PPO_STATS, VALUE_STATS, type StatReduce,
} from './loss';

/** What the losses read, per trajectory of the update: [B][T] shifted rows (T >= every trajectory's length - 1). */
export interface UpdateRows {
  trajectories: readonly Trajectory[];
  padId: number;
  /** 0/1 shifted response mask. */
  mask: number[][];
  advantages: number[][];
  /** Old log-probs, or null in the first and only minibatch of an on-policy update (the detached current ones). */
  oldLogp: number[][] | null;
  /** Reference log-probs (use_kl_loss). */
  refLogp: number[][] | null;
  /** Critic values at rollout time and GAE returns (gae). */
  values: number[][] | null;
  returns: number[][];
}

/**
 * Sums (or max / min, per StatReduce) of the stats of every micro-batch; result() divides the sums by the number of
 * minibatches, giving the mean over minibatches of each minibatch's value (ROLL's "@sum" metrics / backward_steps).
 */
export class StatAccumulator {
  private readonly values = new Map<string, number>();
  private readonly kinds = new Map<string, StatReduce>();

  /** Adds one micro-batch's stats; names missing from `kinds` are sums. */
  add(stats: Record<string, number>, kinds: Record<string, StatReduce> = {}): void {
    for (const [name, v] of Object.entries(stats)) {
      const kind = kinds[name] ?? 'sum';
      const prev = this.values.get(name);
      this.kinds.set(name, kind);
      if (prev === undefined) this.values.set(name, v);
      else this.values.set(name, kind === 'max' ? Math.max(prev, v) : kind === 'min' ? Math.min(prev, v) : prev + v);
    }
  }

  /** The metrics after `minibatches` minibatches; a max / min over no sampled token (never finite) is 1, a ratio's neutral value. */
  result(minibatches: number): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, v] of this.values) {
      out[name] = this.kinds.get(name) === 'sum' ? v / Math.max(minibatches, 1) : Number.isFinite(v) ? v : 1;
    }
    return out;
  }
}

/**
 * Packs each micro-batch of `minibatch` (length-bucketed, `microSize` trajectories) and returns its loss builder;
 * `pick` slices [B][T] rows to the micro-batch's rows and padded length.
 */
function microBatchFns(
  rows: UpdateRows, minibatch: readonly number[], microSize: number,
  f: (ids: tf.Tensor2D, am: tf.Tensor2D, mask: tf.Tensor2D, pick: (r: number[][]) => tf.Tensor2D) => tf.Scalar,
): Array<() => tf.Scalar> {
  const lengths = rows.trajectories.map((t) => t.inputIds.length);
  return lengthBucketedMicroBatches(minibatch, lengths, microSize).map((idx) => () => {
    const batch = packBatch(idx.map((i) => rows.trajectories[i]), rows.padId);
    const Tm = batch.mask[0].length;
    const pick = (r: number[][]) => tf.tensor2d(idx.map((i) => r[i].slice(0, Tm)), [idx.length, Tm]);
    try {
      return f(batch.ids, batch.attentionMask, tf.tensor2d(batch.mask, [idx.length, Tm]), pick);
    } finally {
      batch.ids.dispose();
      batch.attentionMask.dispose();
    }
  });
}

/**
 * The actor's loss builders for one minibatch (SPEC.md §6): pg (ppoLoss) + kl_loss_coef * k3 KL loss (use_kl_loss) -
 * entropy_loss_coef * entropy, each aggregated with loss_agg_mode and the minibatch's denominators (sequence_length - 1
 * for seq-mean-token-sum-norm, the length ROLL pads to). Each builder adds its micro-batch's stats to `stats`:
 * PPO_STATS, actor/entropy (token-mean), actor/kl_loss (use_kl_loss), actor/total_loss.
 * @param minibatch row indices into `rows`; @param microSize per_device_train_batch_size
 */
export function actorLossFns(
  model: Qwen2, rows: UpdateRows, minibatch: readonly number[], microSize: number, config: RunConfig, stats: StatAccumulator,
): Array<() => tf.Scalar> {
  const denom = aggDenominators(minibatch.map((i) => rows.mask[i]), config.sequence_length - 1);
  const mode = config.loss_agg_mode;
  return microBatchFns(rows, minibatch, microSize, (ids, am, mask, pick) => {
    const { logp, entropy } = tokenLogProbs(model, ids, am);
    const old = rows.oldLogp ? pick(rows.oldLogp) : tf.tensor2d(logp.dataSync() as Float32Array, logp.shape);
    const pg = ppoLoss({ logp, oldLogp: old, advantages: pick(rows.advantages), mask }, {
      pgClip: config.pg_clip, usePgClipRange: config.use_pg_clip_range, pgClipLow: config.pg_clip_low,
      pgClipHigh: config.pg_clip_high, dualClip: config.dual_clip_loss, lossAggMode: mode,
    }, denom);
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
 * The critic's loss builders for one minibatch: valueLoss (0.5 x the row mean of the clipped squared error, whatever
 * loss_agg_mode) with the minibatch's row count as divisor. Each adds VALUE_STATS to `stats`.
 * @param minibatch row indices into `rows` (rows.values required); @param microSize per_device_train_batch_size
 */
export function criticLossFns(
  model: ValueModel, rows: UpdateRows, minibatch: readonly number[], microSize: number, config: RunConfig, stats: StatAccumulator,
): Array<() => tf.Scalar> {
  return microBatchFns(rows, minibatch, microSize, (ids, am, mask, pick) => {
    const [b, L] = ids.shape;
    const values = tf.slice(model.values(ids, am), [0, 0], [b, L - 1]) as tf.Tensor2D;
    const vf = valueLoss({
      values, oldValues: pick(rows.values!), returns: pick(rows.returns), mask, valueClip: config.value_clip, rows: minibatch.length,
    });
    stats.add(vf.stats(), VALUE_STATS);
    return vf.loss;
  });
}
