/**
 * Per-token log-probs and entropies of a sequence under the model (docs/numerics.md §6:
 * logp_t = log_softmax(logits)_t[token_{t+1}]). Differentiable, for use inside tf.variableGrads.
 */
import * as tf from '@tensorflow/tfjs';
import type { Qwen2 } from './qwen2';

/** Options of `tokenLogProbs`. */
export interface TokenLogProbsOptions {
  /** Also return the whole shifted log-softmax (for the "full" KL estimator, docs/configs.md). */
  withLogSoftmax?: boolean;
  /**
   * [B, L-1] of 1 where the outputs are used (the shifted response mask), 0 elsewhere: lm_head and the
   * vocabulary work run only there, and the outputs are 0 elsewhere. Ignored with withLogSoftmax.
   */
  at?: tf.Tensor2D;
  /**
   * false when the entropy is only reported, never differentiated (entropy_loss_coef 0): the backward pass then
   * skips its terms and keeps no log-softmax for them. Default true.
   */
  entropyGradient?: boolean;
}

/**
 * Shifted token log-probs and entropies.
 * index t of the outputs = log p(ids[t+1] | ids[<= t]) and the entropy of the distribution at t.
 * Values at positions whose target is padding are finite but meaningless: the caller multiplies by its mask.
 * @param ids int32 [B, L], right-padded
 * @param attentionMask [B, L] of 1 (real) / 0 (pad)
 * @returns logp float32 [B, L-1] (natural log, nats), entropy float32 [B, L-1] (nats), and with
 *   withLogSoftmax logSoftmax float32 [B, L-1, V]; caller disposes.
 * @throws RangeError when L < 2 or `at` is not [B, L-1].
 */
export function tokenLogProbs(
  model: Qwen2,
  ids: tf.Tensor2D,
  attentionMask: tf.Tensor2D,
  opts: TokenLogProbsOptions = {},
): { logp: tf.Tensor2D; entropy: tf.Tensor2D; logSoftmax?: tf.Tensor3D } {
  const [B, L] = ids.shape;
  if (L < 2) throw new RangeError(`tokenLogProbs: sequence length L = ${L}, need >= 2`);
  if (opts.at && (opts.at.shape[0] !== B || opts.at.shape[1] !== L - 1))
    throw new RangeError(`tokenLogProbs: at has shape [${opts.at.shape}], expected [${B}, ${L - 1}]`);
  const used = opts.at && !opts.withLogSoftmax ? usedPositions(ids, opts.at) : null;
  const entropyGradient = opts.entropyGradient ?? true;
  if (used && used.rows.length > 0) return atPositions(model, ids, attentionMask, used, entropyGradient);
  const V = model.config.vocab_size;
  const logits = model.forward(ids, attentionMask);
  const out = tf.tidy(() => {
    // Every position's next token; the last position has none (0 stands in, its outputs are cut off below).
    const targets = tf.concat([tf.slice(tf.cast(ids, 'int32'), [0, 1], [B, L - 1]), tf.zeros([B, 1], 'int32')], 1);
    const both = logProbAndEntropy(tf.reshape(logits, [B * L, V]), tf.reshape(targets, [B * L]), entropyGradient);
    const [logp, entropy] = tf.unstack(tf.slice(tf.reshape(both, [B, L, 2]), [0, 0, 0], [B, L - 1, 2]), 2) as tf.Tensor2D[];
    if (!opts.withLogSoftmax) return { logp, entropy };
    const logSoftmax = tf.logSoftmax(tf.slice(logits, [0, 0, 0], [B, L - 1, V]), -1) as tf.Tensor3D;
    return { logp, entropy, logSoftmax };
  });
  logits.dispose();
  return out;
}

/** The used positions of a batch: rows b * L + t of the model's output, b * (L-1) + t of ours, and their targets. */
interface UsedPositions {
  rows: number[];
  outRows: number[];
  targets: number[];
}

function usedPositions(ids: tf.Tensor2D, at: tf.Tensor2D): UsedPositions {
  const [B, L] = ids.shape;
  const idData = ids.dataSync();
  const atData = at.dataSync();
  const used: UsedPositions = { rows: [], outRows: [], targets: [] };
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < L - 1; t++) {
      if (atData[b * (L - 1) + t] === 0) continue;
      used.rows.push(b * L + t);
      used.outRows.push(b * (L - 1) + t);
      used.targets.push(idData[b * L + t + 1]);
    }
  }
  return used;
}

/** tokenLogProbs computed at the used positions only, zeros elsewhere. */
function atPositions(
  model: Qwen2,
  ids: tf.Tensor2D,
  attentionMask: tf.Tensor2D,
  used: UsedPositions,
  entropyGradient: boolean,
): { logp: tf.Tensor2D; entropy: tf.Tensor2D } {
  const [B, L] = ids.shape;
  const logits = model.logitsAt(ids, attentionMask, used.rows);
  const out = tf.tidy(() => {
    const both = logProbAndEntropy(logits, tf.tensor1d(used.targets, 'int32'), entropyGradient);
    const spread = spreadRows(both, used.outRows, B * (L - 1));
    return {
      logp: tf.reshape(tf.slice(spread, [0, 0], [-1, 1]), [B, L - 1]) as tf.Tensor2D,
      entropy: tf.reshape(tf.slice(spread, [0, 1], [-1, 1]), [B, L - 1]) as tf.Tensor2D,
    };
  });
  logits.dispose();
  return out;
}

/**
 * values [M, C] placed at rows `rows` of an [N, C] tensor of zeros, differentiable (the gradient gathers those
 * rows back); scatterND has no gradient of its own in tfjs.
 */
function spreadRows(values: tf.Tensor2D, rows: number[], N: number): tf.Tensor2D {
  const [M, C] = values.shape;
  const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const index = tf.tensor2d(rows, [M, 1], 'int32');
    const save = args[1] as tf.GradSaveFunc;
    save([index]);
    return {
      value: tf.scatterND(index, args[0] as tf.Tensor2D, [N, C]) as tf.Tensor2D,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.gatherND(dy, saved[0]),
    };
  });
  return f(values) as tf.Tensor2D;
}

/**
 * log_softmax(logits)[n, targets[n]] and the entropy of row n, as float32 [N, 2], with the gradient w.r.t. the
 * logits in closed form: for a row with probabilities p and log-probs s = log p, d logp = onehot(target) - p and
 * d entropy = -p (s + entropy). So no [N, V] one-hot is built, and the backward pass keeps only p and s where
 * autograd through log_softmax, a one-hot product and p * s kept five [N, V] tensors.
 * @param logits float32 [N, V]; targets int32 [N] in [0, V) (not an input of the custom gradient: it would cast them to float)
 * @param entropyGradient false: the entropy column gets no gradient (only p is kept for the backward pass)
 */
export function logProbAndEntropy(logits: tf.Tensor2D, targets: tf.Tensor1D, entropyGradient = true): tf.Tensor2D {
  const [N, V] = logits.shape;
  const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const save = args[1] as tf.GradSaveFunc;
    const rows = tf.range(0, N, 1, 'int32');
    const logSoftmax = tf.logSoftmax(args[0] as tf.Tensor2D, -1);
    const p = tf.exp(logSoftmax);
    const entropy = tf.neg(tf.sum(tf.mul(p, logSoftmax), -1));
    const logp = tf.gather(tf.reshape(logSoftmax, [N * V]), tf.add(tf.mul(rows, tf.scalar(V, 'int32')), targets));
    const targetAt = tf.stack([rows, targets], 1);
    save(entropyGradient ? [p, targetAt, logSoftmax, entropy] : [p, targetAt]);
    const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => {
      const [ps, at, ss, hs] = saved;
      const dx = tf.tidy(() => {
        const [dLogp, dEntropy] = tf.unstack(dy, 1);
        let scale = tf.expandDims(dLogp, 1);
        if (entropyGradient) scale = tf.add(scale, tf.mul(tf.expandDims(dEntropy, 1), tf.add(ss, tf.expandDims(hs, 1))));
        return tf.sub(tf.scatterND(at, dLogp, [N, V]), tf.mul(ps, scale));
      });
      return [dx];
    };
    return { value: tf.stack([logp, entropy], 1) as tf.Tensor2D, gradFunc };
  });
  return f(logits) as tf.Tensor2D;
}
