/**
 * The StarPO/PPO losses in tfjs (SPEC.md §6; ROLL roll/pipeline/agentic/agentic_actor_worker.py loss_func,
 * the critic worker's value loss, roll/utils/functionals.py agg_loss / masked_mean): loss aggregation, the clipped
 * policy-gradient loss, the k3 KL loss, the entropy bonus and the clipped value loss. KL estimators are in kl.ts.
 * All tensors are float32 [B, T] with T = L-1 (shifted); `mask` is the shifted response mask (0/1).
 * Call inside tf.tidy / tf.variableGrads: intermediates are not disposed here.
 */
import * as tf from '@tensorflow/tfjs';
import { klPenalty } from './kl';
import { LOSS_AGG_MODES, type LossAggMode } from './loss_agg_modes';

export { LOSS_AGG_MODES, type LossAggMode };

const DENOM_FLOOR = 1e-8;

/**
 * sum(values * mask) / max(sum(mask), 1e-8): the masked mean, 0 when the mask is empty.
 * @param values any shape; @param mask same shape, 0/1 float32
 * @returns scalar float32
 */
export function maskedMean(values: tf.Tensor, mask: tf.Tensor): tf.Scalar {
  return tf.div(tf.sum(tf.mul(values, mask)), tf.maximum(tf.sum(mask), DENOM_FLOOR)) as tf.Scalar;
}

/**
 * Aggregates a per-token loss over a minibatch (SPEC.md §6):
 * token-mean = sum(v m)/sum(m); seq-mean-token-mean = mean over sequences with sum_t m > 0 of
 * sum_t(v m)/sum_t(m); seq-mean-token-sum = sum(v m)/B; seq-mean-token-sum-norm = sum(v m)/T.
 * Empty masks give 0, never NaN.
 * @param values [B, T] float32; @param mask [B, T] float32 0/1
 * @returns scalar float32, differentiable w.r.t. values
 * @throws RangeError on an unknown mode or mismatched / non-2D shapes
 */
export function aggLoss(values: tf.Tensor2D, mask: tf.Tensor2D, mode: LossAggMode): tf.Scalar {
  checkShapes({ values, mask });
  const [B, T] = values.shape;
  const vm = tf.mul(values, mask);
  switch (mode) {
    case 'token-mean':
      return maskedMean(values, mask);
    case 'seq-mean-token-mean': {
      const cnt = tf.sum(mask, 1);
      const seqMean = tf.div(tf.sum(vm, 1), tf.maximum(cnt, DENOM_FLOOR));
      const has = tf.cast(tf.greater(cnt, 0), 'float32');
      return tf.div(tf.sum(tf.mul(seqMean, has)), tf.maximum(tf.sum(has), DENOM_FLOOR)) as tf.Scalar;
    }
    case 'seq-mean-token-sum':
      return tf.div(tf.sum(vm), Math.max(B, 1)) as tf.Scalar;
    case 'seq-mean-token-sum-norm':
      return tf.div(tf.sum(vm), Math.max(T, 1)) as tf.Scalar;
    default:
      throw new RangeError(`aggLoss: loss_agg_mode "${String(mode)}" is not known; allowed: ${LOSS_AGG_MODES.join(', ')}`);
  }
}

function checkShapes(ts: Record<string, tf.Tensor>): void {
  const entries = Object.entries(ts);
  const [name0, t0] = entries[0];
  for (const [name, t] of entries) {
    if (t.rank !== 2) throw new RangeError(`${name} must be a 2-D [B, T] tensor, got shape [${t.shape.join(', ')}]`);
    if (t.shape[0] !== t0.shape[0] || t.shape[1] !== t0.shape[1]) {
      throw new RangeError(`${name} has shape [${t.shape.join(', ')}] but ${name0} has [${t0.shape.join(', ')}]; they must match`);
    }
  }
}

/** Inputs of ppoLoss: log-probs of the sampled tokens (current and rollout-time), advantages, mask; [B, T] float32. */
export interface PpoLossInput {
  logp: tf.Tensor2D;
  oldLogp: tf.Tensor2D;
  advantages: tf.Tensor2D;
  mask: tf.Tensor2D;
}

/**
 * ppoLoss options (SPEC.md §2 keys): pgClip = pg_clip (> 0); with usePgClipRange the ratio is clipped
 * to [1 - pgClipLow, 1 + pgClipHigh] (each defaulting to pgClip), else to [1 - pgClip, 1 + pgClip];
 * dualClip = dual_clip_loss (c = 1 + 2*pgClip); lossAggMode = loss_agg_mode.
 */
export interface PpoLossOptions {
  pgClip: number;
  pgClipLow?: number;
  pgClipHigh?: number;
  usePgClipRange?: boolean;
  dualClip?: boolean;
  lossAggMode: LossAggMode;
}

/** A loss and its metrics. `stats()` reads the metrics once (sync) and frees them; `dispose()` frees them unread. */
export interface LossOutput {
  loss: tf.Scalar;
  stats: () => Record<string, number>;
  dispose: () => void;
}
/** Result of ppoLoss. */
export type PpoLossOutput = LossOutput;

/**
 * Wraps a 1-D stat tensor (kept out of the caller's tidy) into LossOutput's stats()/dispose(): stats() reads it
 * once, frees it, names the values in order and lets `finish` adjust the record.
 */
function lazyStats(
  loss: tf.Scalar, names: readonly string[], make: () => tf.Tensor1D, finish?: (r: Record<string, number>, v: number[]) => void,
): LossOutput {
  let statTensor: tf.Tensor1D | null = tf.keep(tf.tidy(make));
  let cached: Record<string, number> | null = null;
  const dispose = (): void => { statTensor?.dispose(); statTensor = null; };
  const stats = (): Record<string, number> => {
    if (cached) return cached;
    if (!statTensor) throw new Error('stats(): the stats were disposed before being read');
    const v = Array.from(statTensor.dataSync());
    dispose();
    const r: Record<string, number> = {};
    names.forEach((name, i) => { r[name] = v[i]; });
    finish?.(r, v);
    cached = r;
    return r;
  };
  return { loss, stats, dispose };
}

/** Names of the stats returned by PpoLossOutput.stats, in order. */
export const PPO_STAT_NAMES = [
  'actor/pg_loss', 'actor/clipfrac', 'actor/clipfrac_high', 'actor/clipfrac_low', 'actor/ratio_mean',
  'actor/ratio_max', 'actor/ratio_min', 'actor/approxkl', 'actor/policykl',
] as const;

/**
 * Clipped policy-gradient loss (SPEC.md §6). ratio = exp((logp - oldLogp) * m) (1 on padding);
 * pg = -min(ratio A, clamp(ratio, 1 - epsLo, 1 + epsHi) A); with dualClip, where A < 0:
 * pg = min(pg, -c A), c = 1 + 2 pgClip; loss = aggLoss(pg, m, lossAggMode). Differentiable w.r.t. logp.
 * Stats (masked over tokens with m = 1; ratio_max/min are 1 when the mask is empty):
 * actor/pg_loss (= loss), actor/clipfrac_low = mean(ratio < 1 - epsLo), actor/clipfrac_high =
 * mean(ratio > 1 + epsHi), actor/clipfrac = their sum, actor/ratio_mean|max|min,
 * actor/approxkl = mean(0.5 (logp - oldLogp)^2) (ROLL's "mse" estimator), actor/policykl = mean(oldLogp - logp).
 * @throws RangeError on mismatched shapes, a clip <= 0 or an unknown lossAggMode.
 */
export function ppoLoss(input: PpoLossInput, opts: PpoLossOptions): PpoLossOutput {
  const { logp, oldLogp, advantages, mask } = input;
  checkShapes({ logp, oldLogp, advantages, mask });
  if (!LOSS_AGG_MODES.includes(opts.lossAggMode)) {
    throw new RangeError(`ppoLoss: loss_agg_mode "${String(opts.lossAggMode)}" is not known; allowed: ${LOSS_AGG_MODES.join(', ')}`);
  }
  const epsLo = opts.usePgClipRange ? opts.pgClipLow ?? opts.pgClip : opts.pgClip;
  const epsHi = opts.usePgClipRange ? opts.pgClipHigh ?? opts.pgClip : opts.pgClip;
  for (const [name, v] of [['pg_clip', opts.pgClip], ['pg_clip_low', epsLo], ['pg_clip_high', epsHi]] as const) {
    if (!(v > 0 && Number.isFinite(v))) throw new RangeError(`ppoLoss: ${name} must be a positive finite number, got ${v}`);
  }
  const diff = tf.mul(tf.sub(logp, oldLogp), mask);
  const ratio = tf.exp(diff);
  const surr1 = tf.mul(ratio, advantages);
  const surr2 = tf.mul(tf.clipByValue(ratio, 1 - epsLo, 1 + epsHi), advantages);
  let pg = tf.neg(tf.minimum(surr1, surr2)) as tf.Tensor2D;
  if (opts.dualClip) {
    const c = 1 + 2 * opts.pgClip;
    pg = tf.where(tf.less(advantages, 0), tf.minimum(pg, tf.mul(advantages, -c)), pg) as tf.Tensor2D;
  }
  const loss = aggLoss(pg, mask, opts.lossAggMode);
  return lazyStats(loss, PPO_STAT_NAMES, () => {
    const low = tf.cast(tf.less(ratio, 1 - epsLo), 'float32');
    const high = tf.cast(tf.greater(ratio, 1 + epsHi), 'float32');
    const on = tf.greater(mask, 0);
    return tf.stack([
      loss, maskedMean(tf.add(low, high), mask), maskedMean(high, mask), maskedMean(low, mask),
      maskedMean(ratio, mask), tf.max(tf.where(on, ratio, tf.fill(ratio.shape, -Infinity))),
      tf.min(tf.where(on, ratio, tf.fill(ratio.shape, Infinity))),
      maskedMean(tf.mul(tf.square(diff), 0.5), mask), maskedMean(tf.neg(diff), mask), tf.sum(mask),
    ]) as tf.Tensor1D;
  }, (r, v) => {
    if (v[PPO_STAT_NAMES.length] === 0) { r['actor/ratio_max'] = 1; r['actor/ratio_min'] = 1; }
  });
}

/**
 * The KL loss of use_kl_loss (SPEC.md §6; ROLL actor loss_func with compute_approx_kl(kl_penalty="k3") and agg_loss):
 * aggLoss(clamp(exp(ref - logp) - (ref - logp) - 1, -10, 10), mask, mode). The caller adds kl_loss_coef times it.
 * @param logp [B, T] float32 current log-probs (differentiable); @param refLogp [B, T] float32 reference log-probs
 * @param mask [B, T] float32 0/1 response mask; @param mode loss_agg_mode
 * @returns scalar float32 (actor/kl_loss)
 * @throws RangeError on mismatched shapes or an unknown mode.
 */
export function klLoss(logp: tf.Tensor2D, refLogp: tf.Tensor2D, mask: tf.Tensor2D, mode: LossAggMode): tf.Scalar {
  checkShapes({ logp, refLogp, mask });
  return aggLoss(klPenalty(logp, refLogp, 'k3'), mask, mode);
}

/**
 * Entropy term of the actor loss (SPEC.md §6; ROLL aggregates the token entropy with agg_loss):
 * aggLoss(entropy, mask, mode). The caller subtracts entropy_loss_coef times it (a bonus).
 * @param entropy [B, T] float32 token entropies (nats); @param mask [B, T] float32 0/1; @param mode loss_agg_mode
 * @returns scalar float32 (actor/entropy), differentiable w.r.t. entropy
 * @throws RangeError on mismatched shapes or an unknown mode.
 */
export function entropyBonus(entropy: tf.Tensor2D, mask: tf.Tensor2D, mode: LossAggMode): tf.Scalar {
  return aggLoss(entropy, mask, mode);
}

/** Inputs of valueLoss; tensors are float32 [B, T] on the shifted positions. */
export interface ValueLossInput {
  /** Current critic predictions (differentiable). */
  values: tf.Tensor2D;
  /** Critic predictions at rollout time (the ones GAE used). */
  oldValues: tf.Tensor2D;
  /** GAE returns A + V (computeAdvantages' `returns`). */
  returns: tf.Tensor2D;
  mask: tf.Tensor2D;
  /** Value clip range (ROLL value_clip / cliprange_value), > 0; null = no clipping. */
  valueClip: number | null;
  mode: LossAggMode;
}

/** Names of the stats returned by valueLoss().stats, in order. */
export const VALUE_STAT_NAMES = ['critic/vf_loss', 'critic/vf_clipfrac', 'critic/vpred_mean'] as const;

/**
 * Clipped critic loss (ROLL critic worker loss_func / compute_value_loss; PPO2 value clipping):
 * vclipped = oldValues + clamp(values - oldValues, -valueClip, valueClip) (= values when valueClip is null);
 * vf = 0.5 max((values - returns)^2, (vclipped - returns)^2); loss = aggLoss(vf, mask, mode).
 * Stats: critic/vf_loss (= loss), critic/vf_clipfrac = masked mean of [(vclipped - returns)^2 > (values - returns)^2],
 * critic/vpred_mean = masked mean of values.
 * @returns LossOutput; the loss is differentiable w.r.t. values
 * @throws RangeError on mismatched shapes, a valueClip that is not > 0, or an unknown mode.
 */
export function valueLoss(input: ValueLossInput): LossOutput {
  const { values, oldValues, returns, mask, valueClip, mode } = input;
  checkShapes({ values, oldValues, returns, mask });
  if (valueClip !== null && !(valueClip > 0 && Number.isFinite(valueClip))) {
    throw new RangeError(`valueLoss: value_clip must be a positive finite number or null, got ${valueClip}`);
  }
  const vclipped = valueClip === null
    ? values
    : tf.add(oldValues, tf.clipByValue(tf.sub(values, oldValues), -valueClip, valueClip));
  const l1 = tf.square(tf.sub(values, returns));
  const l2 = tf.square(tf.sub(vclipped, returns));
  const loss = aggLoss(tf.mul(tf.maximum(l1, l2), 0.5) as tf.Tensor2D, mask, mode);
  return lazyStats(loss, VALUE_STAT_NAMES, () =>
    tf.stack([loss, maskedMean(tf.cast(tf.greater(l2, l1), 'float32'), mask), maskedMean(values, mask)]) as tf.Tensor1D);
}
