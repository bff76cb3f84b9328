/**
 * RMSNorm (Zhang & Sennrich 2019; HF Qwen2RMSNorm) of the decoder (qwen2.ts), and its gradient for the decoder
 * layer that computes its own backward pass (lean_layer.ts).
 */
import * as tf from '@tensorflow/tfjs';

/** 1 / sqrt(mean(x^2, -1) + eps): float32 [..., 1] for x [..., E]. */
export function rmsRstd<T extends tf.Tensor>(x: T, eps: number): T {
  return tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), eps)) as T;
}

/** w * x / sqrt(mean(x^2, -1) + eps). @param x float32 [..., E]; w float32 [E] -> float32 [..., E] */
export function rmsNorm<T extends tf.Tensor>(x: T, w: tf.Tensor1D, eps: number): T {
  return tf.tidy(() => tf.mul(tf.mul(x, rmsRstd(x, eps)), w) as T);
}

/**
 * The gradients of y = w * x * r (r = rmsRstd(x)) w.r.t. x and w for the upstream dy: with g = dy * w and
 * xhat = x * r, dx = r * (g - xhat * mean(g * xhat, -1)) and dw = the column sums of dy * xhat.
 * @param x float32 [N, E]; r [N, 1]; w [E]; dy [N, E]
 */
export function rmsNormGrad(dy: tf.Tensor2D, x: tf.Tensor2D, r: tf.Tensor2D, w: tf.Tensor1D): { dx: tf.Tensor2D; dw: tf.Tensor1D } {
  return tf.tidy(() => {
    const xhat = tf.mul(x, r);
    const g = tf.mul(dy, w);
    const dx = tf.mul(r, tf.sub(g, tf.mul(xhat, tf.mean(tf.mul(g, xhat), -1, true)))) as tf.Tensor2D;
    return { dx, dw: tf.sum(tf.mul(dy, xhat), 0) as tf.Tensor1D };
  });
}
