/**
 * Per-token log-probs and entropies of a sequence under the model (docs/numerics.md §6:
 * logp_t = log_softmax(logits)_t[token_{t+1}]). Differentiable, for use inside tf.variableGrads.
 */
import * as tf from '@tensorflow/tfjs';
import type { Qwen2 } from './qwen2';

/**
 * Shifted token log-probs and entropies.
 * index t of the outputs = log p(ids[t+1] | ids[<= t]) and the entropy of the distribution at t.
 * The target is picked with a one-hot product (no gather, whose gradient is missing on wasm).
 * Values at positions whose target is padding are finite but meaningless: the caller multiplies by its mask.
 * @param ids int32 [B, L], right-padded
 * @param attentionMask [B, L] of 1 (real) / 0 (pad)
 * @param withLogSoftmax also return the whole shifted log-softmax (for the "full" KL estimator, docs/configs.md)
 * @returns logp float32 [B, L-1] (natural log, nats), entropy float32 [B, L-1] (nats), and with
 *   withLogSoftmax logSoftmax float32 [B, L-1, V]; caller disposes.
 * @throws RangeError when L < 2.
 */
export function tokenLogProbs(
  model: Qwen2,
  ids: tf.Tensor2D,
  attentionMask: tf.Tensor2D,
  withLogSoftmax = false,
): { logp: tf.Tensor2D; entropy: tf.Tensor2D; logSoftmax?: tf.Tensor3D } {
  const [B, L] = ids.shape;
  if (L < 2) throw new RangeError(`tokenLogProbs: sequence length L = ${L}, need >= 2`);
  const V = model.config.vocab_size;
  const logits = model.forward(ids, attentionMask);
  const out = tf.tidy(() => {
    const lg = tf.slice(logits, [0, 0, 0], [B, L - 1, V]);
    const lsm = tf.logSoftmax(lg, -1);
    const targets = tf.slice(ids, [0, 1], [B, L - 1]);
    // NB: oneHot with dtype 'float32' returns all zeros on the wasm backend (tfjs 4.22); build int32 and cast.
    const oh = tf.cast(tf.oneHot(tf.cast(targets, 'int32'), V), 'float32');
    const logp = tf.sum(tf.mul(lsm, oh), -1) as tf.Tensor2D;
    const entropy = tf.neg(tf.sum(tf.mul(tf.exp(lsm), lsm), -1)) as tf.Tensor2D;
    return withLogSoftmax ? { logp, entropy, logSoftmax: lsm as tf.Tensor3D } : { logp, entropy };
  });
  logits.dispose();
  return out;
}
