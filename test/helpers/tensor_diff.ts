/** How far apart two tensors' values are, for tests that compare two computations of the same numbers. */
import type * as tf from '@tensorflow/tfjs';

/** Largest |a - b| / max(largest |b|, 1e-3) over the entries of two tensors' data. */
export function relDiff(a: tf.Tensor, b: tf.Tensor): number {
  const x = a.dataSync();
  const y = b.dataSync();
  let scale = 1e-3;
  let d = 0;
  for (let i = 0; i < y.length; i++) {
    scale = Math.max(scale, Math.abs(y[i]));
    d = Math.max(d, Math.abs(x[i] - y[i]));
  }
  return d / scale;
}
