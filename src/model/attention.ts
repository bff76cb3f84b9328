/**
 * Batched grouped-query attention (GQA; Ainslie et al. 2023) for the Qwen2 decoder, all heads in one
 * batched matmul. The H query heads are viewed as [KVH, G] (G = H / KVH query heads per kv head; HF's
 * `repeat_kv` maps query head h to kv head floor(h / G)), and the G heads' rows are stacked along the query
 * axis, so scores = Q[B, KVH, G*Lq, D] @ K[B, KVH, Lk, D]^T needs no repeated K/V copies.
 */
import * as tf from '@tensorflow/tfjs';
import { bmm } from './matmul';

/** Additive bias value for masked positions (finite, so a fully masked pad row gives a uniform softmax, not NaN). */
export const MASK_NEG = -1e9;

/**
 * Builds the additive attention bias for causal attention over keys with a key mask.
 * Query i (of Lq) sits at key index (Lk - Lq + i); it may attend key j when j <= Lk - Lq + i and keyMask[b, j] = 1.
 * @param keyMask row-major [B * Lk] of 1 (real token) / 0 (pad)
 * @param groups G = num_attention_heads / num_key_value_heads (the bias is repeated G times along the query axis)
 * @returns float32 tf.Tensor4D [B, 1, G * Lq, Lk] of 0 / MASK_NEG (caller disposes)
 */
export function causalBias(keyMask: ArrayLike<number>, B: number, Lq: number, Lk: number, groups: number): tf.Tensor4D {
  if (keyMask.length !== B * Lk) throw new RangeError(`causalBias: keyMask.length = ${keyMask.length}, expected B*Lk = ${B * Lk}`);
  if (Lq > Lk) throw new RangeError(`causalBias: Lq = ${Lq} must be <= Lk = ${Lk}`);
  const out = new Float32Array(B * groups * Lq * Lk);
  const off = Lk - Lq;
  for (let b = 0; b < B; b++) {
    const base = b * groups * Lq * Lk;
    for (let i = 0; i < Lq; i++) {
      const row = base + i * Lk;
      const lim = off + i;
      for (let j = 0; j < Lk; j++) {
        if (j > lim || keyMask[b * Lk + j] === 0) out[row + j] = MASK_NEG;
      }
    }
    for (let g = 1; g < groups; g++) out.copyWithin(base + g * Lq * Lk, base, base + Lq * Lk);
  }
  return tf.tensor4d(out, [B, 1, groups * Lq, Lk]);
}

/**
 * Scaled dot-product attention for grouped heads.
 * @param q float32 [B, Lq, H, D] (RoPE applied)
 * @param k float32 [B, KVH, Lk, D] (RoPE applied; includes cached keys)
 * @param v float32 [B, KVH, Lk, D]
 * @param bias float32 [B, 1, G*Lq, Lk] from causalBias
 * @returns float32 [B, Lq, H*D] (heads concatenated in HF order h = kvh*G + g)
 */
export function groupedAttention(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, bias: tf.Tensor4D): tf.Tensor3D {
  return tf.tidy(() => {
    const [B, Lq, H, D] = q.shape;
    const KVH = k.shape[1];
    const G = H / KVH;
    // [B, Lq, KVH, G, D] -> [B, KVH, G, Lq, D] -> [B, KVH, G*Lq, D]
    const qg = tf
      .transpose(tf.reshape(tf.mul(q, 1 / Math.sqrt(D)), [B, Lq, KVH, G, D]), [0, 2, 3, 1, 4])
      .reshape([B, KVH, G * Lq, D]);
    const Lk = k.shape[2];
    const S = B * KVH;
    const kT = tf.reshape(tf.transpose(k, [0, 1, 3, 2]), [S, D, Lk]);
    const scores = tf.add(tf.reshape(bmm(tf.reshape(qg, [S, G * Lq, D]) as tf.Tensor3D, kT as tf.Tensor3D), [B, KVH, G * Lq, Lk]), bias);
    const probs = tf.reshape(tf.softmax(scores, -1), [S, G * Lq, Lk]);
    const out = bmm(probs as tf.Tensor3D, tf.reshape(v, [S, Lk, D]) as tf.Tensor3D); // [B*KVH, G*Lq, D]
    return tf.transpose(tf.reshape(out, [B, KVH, G, Lq, D]), [0, 3, 1, 2, 4]).reshape([B, Lq, H * D]) as tf.Tensor3D;
  });
}
