/**
 * Rotary position embeddings (RoPE) of the Qwen2 / Llama decoder (qwen2.ts): the cos/sin tables of a forward's
 * positions and their application to queries and keys.
 */
import * as tf from '@tensorflow/tfjs';
import { rotateHalf } from './kernels';

// RoPE (Su et al. 2021, "RoFormer"; HF `Qwen2RotaryEmbedding`, `apply_rotary_pos_emb`): inv_freq[i] =
// 1 / theta^(2i/D), angle = pos * inv_freq, emb = cat(angle, angle), x' = x * cos(emb) + rotate_half(x) * sin(emb).

/** RoPE's cos and sin tables for the positions of one forward. */
export type RopeTables = { cos: tf.Tensor4D; sin: tf.Tensor4D };

/**
 * cos/sin tables float32 [B, L, 1, D] (broadcast over heads; the caller disposes them) for row-major [B * L]
 * positions, computed in float64 on the host. @throws RangeError when positions.length != B * L or D is odd
 */
export function ropeCosSin(positions: ArrayLike<number>, B: number, L: number, headDimension: number, theta: number): RopeTables {
  if (positions.length !== B * L) throw new RangeError(`ropeCosSin: positions.length = ${positions.length}, expected B*L = ${B * L}`);
  if (headDimension % 2 !== 0) throw new RangeError(`ropeCosSin: headDimension = ${headDimension} must be even`);
  const half = headDimension / 2;
  const inv = new Float64Array(half);
  // HF computes inv_freq in float32: 1 / theta ** (arange(0, D, 2).float() / D).
  for (let i = 0; i < half; i++) inv[i] = Math.fround(1 / theta ** ((2 * i) / headDimension));
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

/** Applies RoPE, differentiable w.r.t. x. @param x float32 [B, L, H, D]; cos, sin [B, L, 1, D] -> [B, L, H, D] */
export function applyRope(x: tf.Tensor4D, cos: tf.Tensor4D, sin: tf.Tensor4D): tf.Tensor4D {
  return tf.tidy(() => {
    const [B, L, H, D] = x.shape;
    const rot = tf.reshape(rotateHalf(tf.reshape(x, [B * L * H, D]) as tf.Tensor2D), [B, L, H, D]);
    return tf.add(tf.mul(x, cos), tf.mul(rot, sin)) as tf.Tensor4D;
  });
}

/**
 * The gradient of `applyRope` w.r.t. x: dy * cos + rotate_half^T(dy * sin), where rotate_half^T = -rotate_half
 * (its matrix is antisymmetric). @param dy float32 [B, L, H, D]; cos, sin [B, L, 1, D] -> [B, L, H, D]
 */
export function applyRopeGrad(dy: tf.Tensor4D, cos: tf.Tensor4D, sin: tf.Tensor4D): tf.Tensor4D {
  return tf.tidy(() => {
    const [B, L, H, D] = dy.shape;
    const rot = tf.reshape(rotateHalf(tf.reshape(tf.mul(dy, sin), [B * L * H, D]) as tf.Tensor2D), [B, L, H, D]);
    return tf.sub(tf.mul(dy, cos), rot) as tf.Tensor4D;
  });
}
