/**
 * Sums over a long last axis (a vocabulary row, a whole weight's squares) and the log-softmax over a vocabulary,
 * at float32's precision on every backend. tfjs-backend-wasm's Sum adds an axis's values one after another in
 * float32, so over a vocabulary of 150k tokens a row sum drifts by about 1e-4 (relative), and every probability of
 * the row with it; native TensorFlow sums in trees and the cpu backend in float64. On wasm a long axis is therefore
 * summed as blocks of K values, then the block sums: two short chains instead of one long one. Other backends keep
 * their own kernels, unchanged.
 */
import * as tf from '@tensorflow/tfjs';
import { bmm } from './kernels';

/** Axes shorter than this are summed in one chain on every backend: their rounding stays near float32's epsilon. */
const SHORT_AXIS = 4096;

/**
 * Cuts an axis of n values into m blocks of k values, with blocks of about `target` values: the fewest blocks from
 * n / target to twice that that divide n (a free reshape), else n / target blocks with zeros padded on.
 */
function blocksOf(n: number, target: number): { m: number; k: number; pad: number } {
  const fewest = Math.ceil(n / target);
  for (let m = fewest; m <= 2 * fewest; m++) if (n % m === 0) return { m, k: n / m, pad: 0 };
  const k = Math.ceil(n / fewest);
  return { m: fewest, k, pad: fewest * k - n };
}

/** Whether an axis of n values needs the blocked sum on the current backend. */
function blocked(n: number): boolean {
  return tf.getBackend() === 'wasm' && n >= SHORT_AXIS;
}

/** Sum over the last axis of x; with keepDims the axis stays, of length 1. */
export function sumLastAxis<R extends tf.Rank>(x: tf.Tensor, keepDims = false): tf.Tensor<R> {
  const n = x.shape[x.rank - 1];
  if (!blocked(n)) return tf.sum(x, -1, keepDims);
  return tf.tidy((): tf.Tensor<R> => {
    const { m, k, pad } = blocksOf(n, Math.sqrt(n));
    const rows = tf.reshape(x, [-1, n]);
    const padded = pad
      ? tf.pad(rows, [
          [0, 0],
          [0, pad],
        ])
      : rows;
    const sums = tf.sum(tf.sum(tf.reshape(padded, [-1, m, k]), -1), -1);
    const shape = keepDims ? [...x.shape.slice(0, -1), 1] : x.shape.slice(0, -1);
    return tf.reshape<tf.Rank>(sums, shape) as tf.Tensor<R>;
  });
}

/** log_softmax over the last axis of x, with tf.logSoftmax's gradient dy - softmax * sum(dy); its sums are sumLastAxis's. */
export function logSoftmaxLastAxis<T extends tf.Tensor>(x: T): T {
  if (!blocked(x.shape[x.rank - 1])) return tf.logSoftmax(x, -1);
  const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const value = tf.tidy(() => {
      const logits = args[0] as tf.Tensor;
      const shifted = tf.sub(logits, tf.max(logits, -1, true));
      return tf.sub(shifted, tf.log(sumLastAxis(tf.exp(shifted), true)));
    });
    (args[1] as tf.GradSaveFunc)([value]);
    const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]) => tf.tidy(() => tf.sub(dy, tf.mul(sumLastAxis(dy, true), tf.exp(saved[0]))));
    return { value, gradFunc };
  });
  return f(x) as T;
}

/** Sum of every value of x, as sumLastAxis sums a long axis. */
export function sumAll(x: tf.Tensor): tf.Scalar {
  return blocked(x.size) ? tf.tidy(() => sumLastAxis<tf.Rank.R0>(tf.reshape(x, [-1]))) : tf.sum(x);
}

/**
 * a [C, K] @ b [K, E] for a long inner axis K (the vocabulary, in the gradient of the LM head's input). XNNPACK
 * adds an output's K products one after another, so on wasm K is cut into blocks of at most about SHORT_AXIS
 * values, multiplied as one batched matmul, and the few block products summed.
 */
export function matMulLongInner(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  const [C, K] = a.shape;
  if (!blocked(K)) return tf.matMul(a, b);
  return tf.tidy(() => {
    const { m, k, pad } = blocksOf(K, SHORT_AXIS);
    const ap = pad
      ? tf.pad(a, [
          [0, 0],
          [0, pad],
        ])
      : a;
    const bp = pad
      ? tf.pad(b, [
          [0, pad],
          [0, 0],
        ])
      : b;
    const blocksA = tf.transpose(tf.reshape(ap, [C, m, k]), [1, 0, 2]) as tf.Tensor3D;
    return tf.sum(bmm(blocksA, tf.reshape(bp, [m, k, b.shape[1]]) as tf.Tensor3D), 0) as tf.Tensor2D;
  });
}
