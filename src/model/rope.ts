/**
 * Rotary position embeddings as in HF transformers' Qwen2 (`Qwen2RotaryEmbedding`, `apply_rotary_pos_emb`,
 * `rotate_half`): inv_freq[i] = 1 / theta^(2i/D), angle = pos * inv_freq, emb = cat(angle, angle),
 * x' = x * cos(emb) + rotate_half(x) * sin(emb) with rotate_half(x) = cat(-x[D/2:], x[:D/2]).
 * (Su et al. 2021, "RoFormer".)
 */
import * as tf from '@tensorflow/tfjs';

/**
 * cos/sin tables for explicit positions, computed in float64 on the host and returned as float32.
 * @param positions row-major [B * L] integer positions (>= 0)
 * @returns cos, sin: float32 tf.Tensor4D [B, L, 1, D] (broadcast over heads); the caller disposes them.
 * @throws RangeError when positions.length != B * L or headDimension is odd.
 */
export function ropeCosSin(
  positions: ArrayLike<number>,
  B: number,
  L: number,
  headDimension: number,
  theta: number,
): { cos: tf.Tensor4D; sin: tf.Tensor4D } {
  if (positions.length !== B * L) throw new RangeError(`ropeCosSin: positions.length = ${positions.length}, expected B*L = ${B * L}`);
  if (headDimension % 2 !== 0) throw new RangeError(`ropeCosSin: headDimension = ${headDimension} must be even`);
  const half = headDimension / 2;
  const inv = new Float64Array(half);
  // HF computes inv_freq in float32: 1 / theta ** (arange(0, D, 2).float() / D).
  for (let i = 0; i < half; i++) inv[i] = Math.fround(1 / Math.pow(theta, (2 * i) / headDimension));
  const cos = new Float32Array(B * L * headDimension);
  const sin = new Float32Array(B * L * headDimension);
  for (let r = 0; r < B * L; r++) {
    const p = positions[r];
    const o = r * headDimension;
    for (let i = 0; i < half; i++) {
      const a = Math.fround(p * inv[i]);
      const c = Math.cos(a);
      const s = Math.sin(a);
      cos[o + i] = c;
      cos[o + half + i] = c;
      sin[o + i] = s;
      sin[o + half + i] = s;
    }
  }
  return { cos: tf.tensor4d(cos, [B, L, 1, headDimension]), sin: tf.tensor4d(sin, [B, L, 1, headDimension]) };
}

const rotCache = new Map<number, { r: tf.Tensor2D; rT: tf.Tensor2D }>();

/**
 * rotate_half as a matrix and its transpose: rotate_half(x) = x @ R with R[i + D/2, i] = -1 and R[i - D/2, i] = 1.
 * Kept (not disposed) per head dimension, so XNNPACK also keeps their packed forms.
 */
function rotateHalfMatrices(D: number): { r: tf.Tensor2D; rT: tf.Tensor2D } {
  let m = rotCache.get(D);
  if (!m) {
    const half = D / 2;
    const r = new Float32Array(D * D); // r[row, col] = R[row, col]
    for (let i = 0; i < half; i++) r[(i + half) * D + i] = -1;
    for (let i = half; i < D; i++) r[(i - half) * D + i] = 1;
    const rTensor = tf.keep(tf.tensor2d(r, [D, D]));
    m = { r: rTensor, rT: tf.keep(tf.transpose(rTensor)) };
    rotCache.set(D, m);
  }
  return m;
}

/**
 * rotate_half(x) = x @ R for x float32 [N, D], differentiable w.r.t. x only (dx = dy @ R^T): plain matmuls with
 * a constant right operand (on wasm fast XNNPACK products, where split/concat on the last axis copy the whole
 * tensor per piece).
 */
function rotateHalf(x: tf.Tensor2D): tf.Tensor2D {
  const { r, rT } = rotateHalfMatrices(x.shape[1]);
  const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => ({
    value: tf.matMul(args[0] as tf.Tensor2D, r) as tf.Tensor2D,
    gradFunc: (dy: tf.Tensor2D) => tf.matMul(dy, rT),
  }));
  return f(x) as tf.Tensor2D;
}

/**
 * Applies RoPE. Differentiable w.r.t. x.
 * @param x float32 [B, L, H, D]
 * @param cos float32 [B, L, 1, D] from ropeCosSin
 * @param sin float32 [B, L, 1, D]
 * @returns float32 [B, L, H, D]
 */
export function applyRope(x: tf.Tensor4D, cos: tf.Tensor4D, sin: tf.Tensor4D): tf.Tensor4D {
  return tf.tidy(() => {
    const [B, L, H, D] = x.shape;
    const rot = tf.reshape(rotateHalf(tf.reshape(x, [B * L * H, D]) as tf.Tensor2D), [B, L, H, D]);
    return tf.add(tf.mul(x, cos), tf.mul(rot, sin)) as tf.Tensor4D;
  });
}
