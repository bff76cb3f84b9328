/**
 * KL estimators between the policy and the frozen reference policy (SPEC.md §2 kl_penalty, §5.2, §6;
 * ROLL roll/utils/functionals.py compute_approx_kl; J. Schulman, "Approximating KL Divergence", 2020,
 * http://joschu.net/blog/kl-approx.html for k1/k3). Tensor functions on float32 log-probs (nats).
 * Call inside tf.tidy / tf.variableGrads: intermediates are not disposed here.
 */
import * as tf from '@tensorflow/tfjs';
import { KL_PENALTIES, type KlPenalty } from './kl_penalties';

export { KL_PENALTIES, type KlPenalty };

/** k3 is clamped to [-K3_CLAMP, K3_CLAMP] (ROLL compute_approx_kl, and the KL loss of SPEC.md §6). */
export const K3_CLAMP = 10;

/**
 * Per-token KL estimate from the log-probs of the sampled tokens (ROLL compute_approx_kl), with d = logp - refLogp:
 * kl (k1) = d; abs = |d|; mse (k2) = 0.5 d^2; k3 = clamp(exp(-d) + d - 1, -10, 10), i.e.
 * exp(ref - logp) - (ref - logp) - 1. Not masked: the caller multiplies by its response mask.
 * Elementwise, differentiable w.r.t. both inputs (k3 has zero gradient where the clamp is active).
 * @param logp [B, T] float32 log-probs of the sampled tokens under the policy (or old policy)
 * @param refLogp [B, T] float32 log-probs of the same tokens under the reference policy
 * @param kind one of kl, abs, mse, k3
 * @returns [B, T] float32 (nats)
 * @throws Error when the shapes differ (tf.util.assertShapesMatch); RangeError for kind `full` (use klFull)
 *   or an unknown kind.
 */
export function klPenalty(logp: tf.Tensor2D, refLogp: tf.Tensor2D, kind: KlPenalty): tf.Tensor2D {
  tf.util.assertShapesMatch(logp.shape, refLogp.shape, 'klPenalty: logp and refLogp:');
  const d = tf.sub(logp, refLogp) as tf.Tensor2D;
  switch (kind) {
    case 'kl':
      return d;
    case 'abs':
      return tf.abs(d);
    case 'mse':
      return tf.mul(tf.square(d), 0.5);
    case 'k3':
      return tf.clipByValue(tf.sub(tf.add(tf.exp(tf.neg(d)), d), 1), -K3_CLAMP, K3_CLAMP) as tf.Tensor2D;
    case 'full':
      throw new RangeError('klPenalty: kl_penalty "full" needs the whole log-softmax over the vocabulary; call klFull(logpAll, refLogpAll)');
    default:
      throw new RangeError(`klPenalty: kl_penalty "${String(kind)}" is not known; allowed: ${KL_PENALTIES.join(', ')}`);
  }
}

/**
 * Exact KL(pi || ref) per position over the vocabulary (kl_penalty `full`; ROLL compute_approx_kl with
 * F.kl_div(ref, logp, log_target=True).sum(-1)): sum_v exp(logpAll) * (logpAll - refLogpAll).
 * @param logpAll [B, T, V] float32 log-softmax of the policy
 * @param refLogpAll [B, T, V] float32 log-softmax of the reference policy
 * @returns [B, T] float32 (nats), not masked
 * @throws Error when the shapes differ (tf.util.assertShapesMatch).
 */
export function klFull(logpAll: tf.Tensor3D, refLogpAll: tf.Tensor3D): tf.Tensor2D {
  tf.util.assertShapesMatch(logpAll.shape, refLogpAll.shape, 'klFull: logpAll and refLogpAll:');
  return tf.sum(tf.mul(tf.exp(logpAll), tf.sub(logpAll, refLogpAll)), -1) as tf.Tensor2D;
}
