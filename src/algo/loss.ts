/**
 * The StarPO/PPO losses in tfjs (docs/numerics.md §6; ROLL roll/pipeline/agentic/agentic_actor_worker.py loss_func,
 * the critic worker's value loss, roll/utils/functionals.py agg_loss / masked_mean): loss aggregation, the clipped
 * policy-gradient loss, the k3 KL loss, the entropy bonus and the clipped value loss. KL estimators are in kl.ts.
 * All tensors are float32 [B, T] with T = L-1 (shifted); `mask` is the shifted response mask (0/1).
 * Call inside tf.tidy / tf.variableGrads: intermediates are not disposed here.
 */
import * as tf from '@tensorflow/tfjs';
import { LOSS_AGG_MODES, type LossAggMode } from '../contract';
import { klPenalty } from './kl';

export { LOSS_AGG_MODES, type LossAggMode };

/** Added to a row's token count in row means (ROLL masked_mean). */
const DENOM_FLOOR = 1e-8;
/** Added to the row count of the seq-mean modes (ROLL agg_loss). */
const ROWS_EPS = 1e-8;

/**
 * The denominators of loss aggregation, taken from a whole minibatch (§6; ROLL strategy.py
 * _get_batch_num_tokens / _get_global_valid_samples): every micro-batch divides by them, so the micro-batch
 * losses add up to the minibatch's loss and neither the loss nor its gradient depends on the micro-batch size.
 */
export interface AggDenominators {
  /** Sampled tokens of the minibatch (1 when there are none). */
  tokens: number;
  /** Rows of the minibatch with at least one sampled token (1 when there are none). */
  rows: number;
  /** Divisor of seq-mean-token-sum-norm: the padded shifted length (ROLL pads to sequence_length, so sequence_length - 1). */
  normLength: number;
}

/**
 * The denominators of a minibatch from its shifted response mask rows.
 * @param mask [B][T] 0/1 rows of the whole minibatch; @param normLength seq-mean-token-sum-norm's divisor (> 0)
 */
export function aggDenominators(mask: readonly (readonly number[])[], normLength: number): AggDenominators {
  let tokens = 0;
  let rows = 0;
  for (const row of mask) {
    const n = row.reduce((a, b) => a + b, 0);
    tokens += n;
    if (n > 0) rows += 1;
  }
  return { tokens: Math.max(tokens, 1), rows: Math.max(rows, 1), normLength };
}

/**
 * Aggregates a per-token loss (§6; ROLL roll/utils/functionals.py agg_loss with the strategy's
 * batch_num_tokens and global_valid_samples): token-mean = sum(v m)/tokens; seq-mean-token-mean =
 * sum over rows with sum_t m > 0 of sum_t(v m)/sum_t(m), divided by rows; seq-mean-token-sum = sum(v m)/rows;
 * seq-mean-token-sum-norm = sum(v m)/normLength. Without `denom` the batch is its own minibatch (normLength = T).
 * With the minibatch's denominators the result is this micro-batch's share of the minibatch loss.
 * Empty masks give 0, never NaN.
 * @param values [B, T] float32; @param mask [B, T] float32 0/1; @param denom the minibatch's denominators
 * @returns scalar float32, differentiable w.r.t. values
 * @throws RangeError on an unknown mode or mismatched / non-2D shapes
 */
export function aggLoss(values: tf.Tensor2D, mask: tf.Tensor2D, mode: LossAggMode, denom?: AggDenominators): tf.Scalar {
  checkShapes({ values, mask });
  const T = values.shape[1];
  const cnt = tf.sum(mask, 1);
  const has = tf.cast(tf.greater(cnt, 0), 'float32');
  const tokens = denom ? tf.scalar(denom.tokens) : tf.maximum(tf.sum(mask), 1);
  const rows = tf.add(denom ? tf.scalar(denom.rows) : tf.maximum(tf.sum(has), 1), ROWS_EPS);
  // Row sums first: float32 sums of a few hundred terms each, so a micro-batch's share rounds like the whole minibatch's.
  const rowSums = tf.sum(tf.mul(values, mask), 1);
  const total = tf.sum(rowSums);
  switch (mode) {
    case 'token-mean':
      return tf.div(total, tokens) as tf.Scalar;
    case 'seq-mean-token-mean':
      return tf.div(tf.sum(tf.mul(tf.div(rowSums, tf.add(cnt, DENOM_FLOOR)), has)), rows) as tf.Scalar;
    case 'seq-mean-token-sum':
      return tf.div(total, rows) as tf.Scalar;
    case 'seq-mean-token-sum-norm':
      return tf.div(total, denom ? denom.normLength : Math.max(T, 1)) as tf.Scalar;
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
 * ppoLoss options (config keys): pgClip = pg_clip (> 0); with usePgClipRange the ratio is clipped
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

/**
 * How a stat combines over the micro-batches of a minibatch: `sum` of the micro-batches' shares (each computed with the
 * minibatch's denominators, so the sum is the minibatch's value), or the `max` / `min` over them.
 */
export type StatReduce = 'sum' | 'max' | 'min';

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
 * once, frees it and names the values in the order of `names`.
 */
function lazyStats(loss: tf.Scalar, names: readonly string[], make: () => tf.Tensor1D): LossOutput {
  let statTensor: tf.Tensor1D | null = tf.keep(tf.tidy(make));
  let cached: Record<string, number> | null = null;
  const dispose = (): void => {
    statTensor?.dispose();
    statTensor = null;
  };
  const stats = (): Record<string, number> => {
    if (cached) return cached;
    if (!statTensor) throw new Error('stats(): the stats were disposed before being read');
    const v = Array.from(statTensor.dataSync());
    dispose();
    const r: Record<string, number> = {};
    names.forEach((name, i) => {
      r[name] = v[i];
    });
    cached = r;
    return r;
  };
  return { loss, stats, dispose };
}

/** The stats of ppoLoss (ROLL's agentic actor worker names) and how each combines over micro-batches. */
export const PPO_STATS = {
  'actor/pg_loss': 'sum',
  'actor/clipfrac': 'sum',
  'actor/ppo_ratio_clipfrac': 'sum',
  'actor/ppo_ratio_high_clipfrac': 'sum',
  'actor/ppo_ratio_low_clipfrac': 'sum',
  'actor/ratio_mean': 'sum',
  'actor/ratio_max': 'max',
  'actor/ratio_min': 'min',
  'actor/approxkl': 'sum',
  'actor/policykl': 'sum',
} as const satisfies Record<string, StatReduce>;

/**
 * Clipped policy-gradient loss (§6; ROLL roll/pipeline/agentic/agentic_actor_worker.py loss_func).
 * ratio = exp((logp - oldLogp) * m) (1 on padding); surr1 = ratio A, surr2 = clamp(ratio, 1 - epsLo, 1 + epsHi) A;
 * pg = -min(surr1, surr2); with dualClip, where A < 0: pg = min(pg, -c A), c = 1 + 2 pgClip;
 * loss = aggLoss(pg, m, lossAggMode, denom). Differentiable w.r.t. logp.
 * Stats (PPO_STATS; with d = logp - oldLogp, agg = aggLoss with lossAggMode and denom, shares of the minibatch):
 * actor/pg_loss (= loss); actor/clipfrac = agg(surr2 < surr1); actor/ppo_ratio_{high,low}_clipfrac = token-mean of
 * ratio > 1 + epsHi / ratio < 1 - epsLo, actor/ppo_ratio_clipfrac their sum; actor/ratio_mean = seq-mean-token-mean of
 * the ratio; actor/ratio_max|min over sampled tokens (-Infinity / Infinity without any); actor/approxkl = agg(0.5 d^2);
 * actor/policykl = agg(d).
 * @throws RangeError on mismatched shapes, a clip <= 0 or an unknown lossAggMode.
 */
export function ppoLoss(input: PpoLossInput, opts: PpoLossOptions, denom?: AggDenominators): PpoLossOutput {
  const { logp, oldLogp, advantages, mask } = input;
  checkShapes({ logp, oldLogp, advantages, mask });
  const mode = opts.lossAggMode;
  if (!LOSS_AGG_MODES.includes(mode)) {
    throw new RangeError(`ppoLoss: loss_agg_mode "${String(mode)}" is not known; allowed: ${LOSS_AGG_MODES.join(', ')}`);
  }
  const epsLo = opts.usePgClipRange ? (opts.pgClipLow ?? opts.pgClip) : opts.pgClip;
  const epsHi = opts.usePgClipRange ? (opts.pgClipHigh ?? opts.pgClip) : opts.pgClip;
  for (const [name, v] of [
    ['pg_clip', opts.pgClip],
    ['pg_clip_low', epsLo],
    ['pg_clip_high', epsHi],
  ] as const) {
    if (!(v > 0 && Number.isFinite(v))) throw new RangeError(`ppoLoss: ${name} must be a positive finite number, got ${v}`);
  }
  const diff = tf.mul(tf.sub(logp, oldLogp), mask) as tf.Tensor2D;
  const ratio = tf.exp(diff) as tf.Tensor2D;
  const surr1 = tf.mul(ratio, advantages);
  const surr2 = tf.mul(tf.clipByValue(ratio, 1 - epsLo, 1 + epsHi), advantages);
  let pg = tf.neg(tf.minimum(surr1, surr2)) as tf.Tensor2D;
  if (opts.dualClip) {
    const c = 1 + 2 * opts.pgClip;
    pg = tf.where(tf.less(advantages, 0), tf.minimum(pg, tf.mul(advantages, -c)), pg) as tf.Tensor2D;
  }
  const loss = aggLoss(pg, mask, mode, denom);
  return lazyStats(loss, Object.keys(PPO_STATS), () => {
    const agg = (v: tf.Tensor, m: LossAggMode = mode) => aggLoss(v as tf.Tensor2D, mask, m, denom);
    const low = tf.cast(tf.less(ratio, 1 - epsLo), 'float32');
    const high = tf.cast(tf.greater(ratio, 1 + epsHi), 'float32');
    const on = tf.greater(mask, 0);
    return tf.stack([
      loss,
      agg(tf.cast(tf.less(surr2, surr1), 'float32')),
      agg(tf.add(low, high), 'token-mean'),
      agg(high, 'token-mean'),
      agg(low, 'token-mean'),
      agg(ratio, 'seq-mean-token-mean'),
      tf.max(tf.where(on, ratio, tf.fill(ratio.shape, -Infinity))),
      tf.min(tf.where(on, ratio, tf.fill(ratio.shape, Infinity))),
      agg(tf.mul(tf.square(diff), 0.5)),
      agg(diff),
    ]) as tf.Tensor1D;
  });
}

/**
 * The KL loss of use_kl_loss (§6; ROLL actor loss_func with compute_approx_kl(kl_penalty="k3") and agg_loss):
 * aggLoss(clamp(exp(ref - logp) - (ref - logp) - 1, -10, 10), mask, mode, denom). The caller adds kl_loss_coef times it.
 * @param logp [B, T] float32 current log-probs (differentiable); @param refLogp [B, T] float32 reference log-probs
 * @param mask [B, T] float32 0/1 response mask; @param mode loss_agg_mode; @param denom the minibatch's denominators
 * @returns scalar float32 (actor/kl_loss)
 * @throws RangeError on mismatched shapes or an unknown mode.
 */
export function klLoss(logp: tf.Tensor2D, refLogp: tf.Tensor2D, mask: tf.Tensor2D, mode: LossAggMode, denom?: AggDenominators): tf.Scalar {
  checkShapes({ logp, refLogp, mask });
  return aggLoss(klPenalty(logp, refLogp, 'k3'), mask, mode, denom);
}

/**
 * Entropy term of the actor loss (§6; ROLL aggregates the token entropy with agg_loss):
 * aggLoss(entropy, mask, mode, denom). The caller subtracts entropy_loss_coef times it (a bonus).
 * @param entropy [B, T] float32 token entropies (nats); @param mask [B, T] float32 0/1; @param mode loss_agg_mode
 * @param denom the minibatch's denominators
 * @returns scalar float32, differentiable w.r.t. entropy
 * @throws RangeError on mismatched shapes or an unknown mode.
 */
export function entropyBonus(entropy: tf.Tensor2D, mask: tf.Tensor2D, mode: LossAggMode, denom?: AggDenominators): tf.Scalar {
  return aggLoss(entropy, mask, mode, denom);
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
  /** Rows of the whole minibatch, the divisor of every row mean (default: this batch's rows). */
  rows?: number;
}

/** The stats of valueLoss (ROLL's critic worker names); each is a share of the minibatch's row mean. */
export const VALUE_STATS = {
  'critic/loss': 'sum',
  'critic/value': 'sum',
  'critic/vpred': 'sum',
  'critic/clipfrac': 'sum',
  'critic/error': 'sum',
} as const satisfies Record<string, StatReduce>;

/**
 * Clipped critic loss (ROLL roll/pipeline/base_worker.py CriticWorker.loss_func; PPO2 value clipping), whatever
 * loss_agg_mode is: vclipped = oldValues + clamp(values - oldValues, -valueClip, valueClip) (= values when valueClip
 * is null); vf = max((values - returns)^2, (vclipped - returns)^2); loss = 0.5 * rowMean(vf), where
 * rowMean(x) = sum over rows of the masked token mean of x, divided by `rows` (a row without sampled tokens counts 0).
 * Stats (VALUE_STATS): critic/loss (= loss), critic/value = rowMean(oldValues), critic/vpred = rowMean(values),
 * critic/clipfrac = rowMean((vclipped - returns)^2 > (values - returns)^2), or, as ROLL logs it without value_clip,
 * rowMean((values - returns)^2); critic/error = rowMean((values - returns)^2).
 * @returns LossOutput; the loss is differentiable w.r.t. values
 * @throws RangeError on mismatched shapes or a valueClip that is not > 0.
 */
export function valueLoss(input: ValueLossInput): LossOutput {
  const { values, oldValues, returns, mask, valueClip } = input;
  checkShapes({ values, oldValues, returns, mask });
  if (valueClip !== null && !(valueClip > 0 && Number.isFinite(valueClip))) {
    throw new RangeError(`valueLoss: value_clip must be a positive finite number or null, got ${valueClip}`);
  }
  const rows = input.rows ?? values.shape[0];
  const cnt = tf.sum(mask, 1);
  const rowMean = (x: tf.Tensor): tf.Scalar =>
    tf.div(tf.sum(tf.div(tf.sum(tf.mul(x, mask), 1), tf.add(cnt, DENOM_FLOOR))), Math.max(rows, 1)) as tf.Scalar;
  const l1 = tf.square(tf.sub(values, returns));
  const vclipped = valueClip === null ? values : tf.add(oldValues, tf.clipByValue(tf.sub(values, oldValues), -valueClip, valueClip));
  const l2 = tf.square(tf.sub(vclipped, returns));
  const loss = tf.mul(rowMean(valueClip === null ? l1 : tf.maximum(l1, l2)), 0.5) as tf.Scalar;
  return lazyStats(
    loss,
    Object.keys(VALUE_STATS),
    () =>
      tf.stack([
        loss,
        rowMean(oldValues),
        rowMean(values),
        valueClip === null ? rowMean(l1) : rowMean(tf.cast(tf.greater(l2, l1), 'float32')),
        rowMean(l1),
      ]) as tf.Tensor1D,
  );
}
