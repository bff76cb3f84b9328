/**
 * Per-token log-probs and entropies of a sequence under the model (docs/numerics.md §6:
 * logp_t = log_softmax(logits)_t[token_{t+1}]). Differentiable, for use inside tf.variableGrads.
 */
import * as tf from '@tensorflow/tfjs';
import { logSoftmaxLastAxis, matMulLongInner, sumLastAxis } from './long_sum';
import type { Qwen2 } from './qwen2';

// 256: at Qwen2.5's 151,936 ids a [256, V] float32 chunk is 156 MB; a chunk's work holds about five (under 1 GB).
/** Tokens per chunk of the vocabulary work (log-softmax, the chosen token's log-prob, the entropy; headLogProbs). */
export const VOCAB_CHUNK_TOKENS = 256;

/** Options of `tokenLogProbs`. */
export interface TokenLogProbsOptions {
  /**
   * Also return the whole shifted log-softmax (for the "full" KL estimator, docs/configs.md): the one output that
   * is a [B, L-1, V] tensor, so the vocabulary work is not chunked then (the no-gradient pass asks for it).
   */
  withLogSoftmax?: boolean;
  /**
   * [B, L-1] of 1 where the outputs are used (the shifted response mask), 0 elsewhere: lm_head and the
   * vocabulary work run only there, and the outputs are 0 elsewhere. Ignored with withLogSoftmax.
   */
  at?: tf.Tensor2D;
  /**
   * false when the entropy is only reported, never differentiated (entropy_loss_coef 0): the backward pass then
   * skips its terms. Default true.
   */
  entropyGradient?: boolean;
  /** Recompute each decoder layer in the backward pass (Qwen2 TrainingForwardOptions). Default false. */
  gradientCheckpointing?: boolean;
  /** The LoRA adapters' dropout masks' seed (Qwen2 TrainingForwardOptions); unset: no dropout. */
  loraDropoutSeed?: number;
  /** Tokens per chunk of the vocabulary work (`headLogProbs`). Default VOCAB_CHUNK_TOKENS. */
  vocabChunk?: number;
}

/**
 * Shifted token log-probs and entropies.
 * index t of the outputs = log p(ids[t+1] | ids[<= t]) and the entropy of the distribution at t.
 * Values at positions whose target is padding are finite but meaningless: the caller multiplies by its mask.
 * Without withLogSoftmax no [tokens, V] tensor larger than one chunk of `vocabChunk` tokens exists, forward or backward.
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
  if (opts.withLogSoftmax) return withLogSoftmax(model, ids, attentionMask, opts);
  // No used position at all: every position is computed, as without `at`.
  let used = usedPositions(ids, opts.at);
  if (used.rows.length === 0) used = usedPositions(ids);
  const hidden = model.hiddenAt(ids, attentionMask, used.rows, {
    gradientCheckpointing: opts.gradientCheckpointing,
    loraDropoutSeed: opts.loraDropoutSeed,
  });
  const out = tf.tidy(() => {
    const { w, wT } = model.lmHead();
    const both = headLogProbs(hidden, w, used.targets, { chunk: opts.vocabChunk, entropyGradient: opts.entropyGradient, wT });
    const spread = used.rows.length === B * (L - 1) ? both : spreadRows(both, used.outRows, B * (L - 1));
    return {
      logp: tf.reshape(tf.slice(spread, [0, 0], [-1, 1]), [B, L - 1]) as tf.Tensor2D,
      entropy: tf.reshape(tf.slice(spread, [0, 1], [-1, 1]), [B, L - 1]) as tf.Tensor2D,
    };
  });
  hidden.dispose();
  return out;
}

/** tokenLogProbs with the whole shifted log-softmax, from the logits of every position. */
function withLogSoftmax(
  model: Qwen2,
  ids: tf.Tensor2D,
  attentionMask: tf.Tensor2D,
  opts: TokenLogProbsOptions,
): { logp: tf.Tensor2D; entropy: tf.Tensor2D; logSoftmax: tf.Tensor3D } {
  const [B, L] = ids.shape;
  const V = model.config.vocab_size;
  const logits = model.forward(ids, attentionMask, {
    gradientCheckpointing: opts.gradientCheckpointing,
    loraDropoutSeed: opts.loraDropoutSeed,
  });
  const out = tf.tidy(() => {
    // Every position's next token; the last position has none (0 stands in, its outputs are cut off below).
    const targets = tf.concat([tf.slice(tf.cast(ids, 'int32'), [0, 1], [B, L - 1]), tf.zeros([B, 1], 'int32')], 1);
    const both = logProbAndEntropy(tf.reshape(logits, [B * L, V]), tf.reshape(targets, [B * L]), opts.entropyGradient);
    const [logp, entropy] = tf.unstack(tf.slice(tf.reshape(both, [B, L, 2]), [0, 0, 0], [B, L - 1, 2]), 2) as tf.Tensor2D[];
    const logSoftmax = logSoftmaxLastAxis(tf.slice(logits, [0, 0, 0], [B, L - 1, V]));
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

/** The positions where `at` is nonzero (every shifted position without `at`), in row-major order. */
function usedPositions(ids: tf.Tensor2D, at?: tf.Tensor2D): UsedPositions {
  const [B, L] = ids.shape;
  const idData = ids.dataSync();
  const atData = at?.dataSync();
  const used: UsedPositions = { rows: [], outRows: [], targets: [] };
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < L - 1; t++) {
      if (atData && atData[b * (L - 1) + t] === 0) continue;
      used.rows.push(b * L + t);
      used.outRows.push(b * (L - 1) + t);
      used.targets.push(idData[b * L + t + 1]);
    }
  }
  return used;
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

/** What the log-prob, the entropy and their gradient read from one block of logits [N, V]. */
interface VocabTerms {
  logSoftmax: tf.Tensor2D;
  p: tf.Tensor2D;
  /** [N] */
  entropy: tf.Tensor1D;
  /** [N] */
  logp: tf.Tensor1D;
  /** int32 [N, 2]: (row, target) */
  targetAt: tf.Tensor2D;
}

/**
 * The log-softmax, probabilities, entropy and target log-prob of logits [N, V]. `ownLogits`: the logits are freed
 * once read, so at most three [N, V] tensors exist at a time (a chunk of headLogProbs).
 */
function vocabTerms(logits: tf.Tensor2D, targets: tf.Tensor1D, ownLogits = false): VocabTerms {
  const [N, V] = logits.shape;
  const rows = tf.range(0, N, 1, 'int32');
  const logSoftmax = logSoftmaxLastAxis(logits);
  if (ownLogits) logits.dispose();
  const p = tf.exp(logSoftmax) as tf.Tensor2D;
  const ps = tf.mul(p, logSoftmax);
  const entropy = tf.neg(sumLastAxis<tf.Rank.R1>(ps));
  ps.dispose();
  const logp = tf.gather(tf.reshape(logSoftmax, [N * V]), tf.add(tf.mul(rows, tf.scalar(V, 'int32')), targets)) as tf.Tensor1D;
  return { logSoftmax, p, entropy, logp, targetAt: tf.stack([rows, targets], 1) as tf.Tensor2D };
}

/**
 * The gradient w.r.t. the logits of dy [N, 2] (upstream gradients of the log-prob and entropy columns), in closed
 * form: for a row with probabilities p and log-probs s = log p, d logp = onehot(target) - p and d entropy =
 * -p (s + entropy). `terms` needs only p and targetAt when the entropy has no gradient. `ownTerms`: p and s are
 * freed as soon as they are read, and every [N, V] intermediate once used, so at most three exist at a time.
 */
function logitsGrad(
  terms: Pick<VocabTerms, 'p' | 'targetAt'> & Partial<VocabTerms>,
  dy: tf.Tensor,
  entropyGradient: boolean,
  ownTerms = false,
): tf.Tensor2D {
  const free = (...ts: tf.Tensor[]) => {
    if (ownTerms) tf.dispose(ts);
  };
  return tf.tidy(() => {
    const [dLogp, dEntropy] = tf.unstack(dy, 1);
    let scale = tf.expandDims(dLogp, 1);
    if (entropyGradient) {
      const { logSoftmax, entropy } = terms as VocabTerms;
      const sh = tf.add(logSoftmax, tf.expandDims(entropy, 1));
      free(logSoftmax);
      const weighted = tf.mul(tf.expandDims(dEntropy, 1), sh);
      sh.dispose();
      scale = tf.add(scale, weighted);
      weighted.dispose();
    } else if (terms.logSoftmax) free(terms.logSoftmax);
    const pScaled = tf.mul(terms.p, scale);
    free(terms.p);
    scale.dispose();
    const oneHot = tf.scatterND(terms.targetAt, dLogp, terms.p.shape);
    const dx = tf.sub(oneHot, pScaled) as tf.Tensor2D;
    tf.dispose([oneHot, pScaled]);
    return dx;
  });
}

/**
 * log_softmax(logits)[n, targets[n]] and the entropy of row n, as float32 [N, 2], with the gradient w.r.t. the
 * logits in closed form (logitsGrad). So no [N, V] one-hot is built, and the backward pass keeps only p and s where
 * autograd through log_softmax, a one-hot product and p * s kept five [N, V] tensors.
 * @param logits float32 [N, V]; targets int32 [N] in [0, V) (not an input of the custom gradient: it would cast them to float)
 * @param entropyGradient false: the entropy column gets no gradient (only p is kept for the backward pass)
 */
export function logProbAndEntropy(logits: tf.Tensor2D, targets: tf.Tensor1D, entropyGradient = true): tf.Tensor2D {
  const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const save = args[1] as tf.GradSaveFunc;
    const t = vocabTerms(args[0] as tf.Tensor2D, targets);
    save(entropyGradient ? [t.p, t.targetAt, t.logSoftmax, t.entropy] : [t.p, t.targetAt]);
    const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => {
      const [p, targetAt, logSoftmax, entropy] = saved as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D, tf.Tensor1D];
      return [logitsGrad({ p, targetAt, logSoftmax, entropy }, dy, entropyGradient)];
    };
    return { value: tf.stack([t.logp, t.entropy], 1) as tf.Tensor2D, gradFunc };
  });
  return f(logits) as tf.Tensor2D;
}

/**
 * logProbAndEntropy of the logits h @ W^T (lm_head), `chunk` rows at a time in the forward pass and again in the
 * backward pass, which recomputes each chunk's logits from the kept h and W: no [N, V] tensor exists, only [chunk, V]
 * ones. Differentiable w.r.t. h and W. The products are those of kernels.ts `linear` on each backend (wasm wants
 * explicit transposes), so with one chunk the numbers are those of lm_head followed by logProbAndEntropy.
 * @param h float32 [N, E]; w float32 [V, E]; targets [N] token ids in [0, V)
 * @param opts.wT W^T kept by the caller (Qwen2.lmHead, on wasm)
 * @returns float32 [N, 2]: the log-prob of each row's target and the row's entropy
 */
export function headLogProbs(
  h: tf.Tensor2D,
  w: tf.Tensor2D,
  targets: readonly number[],
  opts: { chunk?: number; entropyGradient?: boolean; wT?: tf.Tensor2D } = {},
): tf.Tensor2D {
  const N = h.shape[0];
  const chunk = Math.max(1, opts.chunk ?? VOCAB_CHUNK_TOKENS);
  const entropyGradient = opts.entropyGradient ?? true;
  const spans: Array<[number, number]> = [];
  for (let a = 0; a < N; a += chunk) spans.push([a, Math.min(N, a + chunk)]);
  const rowsOf = (t: tf.Tensor2D, [a, b]: [number, number]) => (spans.length === 1 ? t : (tf.slice(t, [a, 0], [b - a, -1]) as tf.Tensor2D));
  const targetsOf = ([a, b]: [number, number]) => tf.tensor1d(targets.slice(a, b) as number[], 'int32');
  const wasm = tf.getBackend() === 'wasm';
  const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const [hi, wi] = args as tf.Tensor2D[];
    (args[2] as tf.GradSaveFunc)([hi, wi]);
    const wT = opts.wT ?? (wasm ? (tf.transpose(wi) as tf.Tensor2D) : undefined);
    const logits = (hc: tf.Tensor2D, ws: tf.Tensor2D, wsT?: tf.Tensor2D): tf.Tensor2D =>
      wsT ? tf.matMul(hc, wsT) : tf.matMul(hc, ws, false, true);
    const parts = spans.map((span) =>
      tf.tidy(() => {
        const t = vocabTerms(logits(rowsOf(hi, span), wi, wT), targetsOf(span), true);
        tf.dispose([t.p, t.logSoftmax]);
        return tf.stack([t.logp, t.entropy], 1) as tf.Tensor2D;
      }),
    );
    const value = (parts.length === 1 ? parts[0] : tf.concat(parts, 0)) as tf.Tensor2D;
    const gradFunc = (dy: tf.Tensor2D, saved: tf.Tensor[]): tf.Tensor[] =>
      tf.tidy(() => {
        const [hs, ws] = saved as tf.Tensor2D[];
        const wsT = opts.wT ?? (wasm ? (tf.transpose(ws) as tf.Tensor2D) : undefined);
        const dh: tf.Tensor2D[] = [];
        let dW: tf.Tensor2D | null = null;
        for (const span of spans) {
          const [dhc, dWc] = tf.tidy(() => {
            const hc = rowsOf(hs, span);
            const dLogits = logitsGrad(vocabTerms(logits(hc, ws, wsT), targetsOf(span), true), rowsOf(dy, span), entropyGradient, true);
            return headGrads(dLogits, hc, ws);
          });
          dh.push(dhc);
          // A running sum: one more [V, E] tensor at a time, not one per chunk.
          if (dW) {
            const sum: tf.Tensor2D = tf.add(dW, dWc);
            tf.dispose([dW, dWc]);
            dW = sum;
          } else dW = dWc;
        }
        return [dh.length === 1 ? dh[0] : tf.concat(dh, 0), dW as tf.Tensor2D];
      });
    return { value, gradFunc };
  });
  return f(h, w) as tf.Tensor2D;
}

/**
 * dh [C, E] and dW [V, E] of logits = h @ W^T from dLogits [C, V], as tfjs's MatMul gradient computes them
 * (native) or kernels.ts `linear` does (wasm: no transpose flags).
 */
function headGrads(dLogits: tf.Tensor2D, h: tf.Tensor2D, w: tf.Tensor2D): [tf.Tensor2D, tf.Tensor2D] {
  if (tf.getBackend() !== 'wasm') return [tf.matMul(dLogits, w), tf.matMul(dLogits, h, true, false)];
  const [V, E] = w.shape;
  return [
    matMulLongInner(dLogits, w),
    (V < E ? tf.transpose(tf.matMul(tf.transpose(h), dLogits)) : tf.matMul(tf.transpose(dLogits), h)) as tf.Tensor2D,
  ];
}
