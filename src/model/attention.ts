/**
 * Batched grouped-query attention (GQA; Ainslie et al. 2023) for the Qwen2 decoder, all heads in one batched
 * matmul per query chunk. The H query heads are viewed as [KVH, G] (G = H / KVH query heads per kv head; HF's
 * `repeat_kv` maps query head h to kv head floor(h / G)); the G heads of a position are stacked along the query
 * axis (row r = position * G + g), so scores = Q[B*KVH, Lq*G, D] @ K[B*KVH, Lk, D]^T needs no repeated K/V.
 *
 * Causal chunking: the queries are split into equal chunks of at most ATTENTION_CHUNK positions; chunk [q0, q1) multiplies
 * only the keys it may see, [0, Lk - Lq + q1). The skipped keys are all masked (their softmax weight is exactly 0
 * in float32), so real rows are unchanged, and the [B*KVH, Lq*G, Lk] score tensors - whose elementwise passes
 * (bias add, softmax and its gradient) cost as much as the matmuls at head size 16 - shrink to about
 * (C + 1) / (2C) of the square for C chunks (0.625 at L = 400).
 */
import * as tf from '@tensorflow/tfjs';
import { bmm } from './matmul';

/** Additive bias value for masked positions (finite, so a fully masked pad row gives a uniform softmax, not NaN). */
export const MASK_NEG = -1e9;

/** Query positions per attention chunk (measured on the tiny model, bench/update_breakdown.ts). */
export const ATTENTION_CHUNK = 128;

/** Query positions [q0, q1) attending keys [0, k1), with their additive bias float32 [B, 1, (q1 - q0) * G, k1]. */
export interface AttentionChunk {
  q0: number;
  q1: number;
  k1: number;
  bias: tf.Tensor4D;
}

/** The attention mask of one forward (shared by all layers): its query chunks. Dispose with `disposeMask`. */
export interface AttentionMask {
  /** Number of query positions Lq and of keys Lk (cached + new). */
  Lq: number;
  Lk: number;
  chunks: AttentionChunk[];
}

/**
 * Builds the chunked causal attention mask over keys with a key mask.
 * Query i (of Lq) sits at key index (Lk - Lq + i); it may attend key j when j <= Lk - Lq + i and keyMask[b, j] = 1.
 * @param keyMask row-major [B * Lk] of 1 (real token) / 0 (pad)
 * @param groups G = num_attention_heads / num_key_value_heads (each query row is repeated G times)
 * @param chunk most query positions per chunk (default ATTENTION_CHUNK; >= Lq gives one chunk over all keys)
 * @returns the mask; its bias tensors are owned by the caller (`disposeMask`)
 * @throws RangeError when keyMask.length != B * Lk or Lq > Lk
 */
export function causalMask(keyMask: ArrayLike<number>, B: number, Lq: number, Lk: number, groups: number, chunk = ATTENTION_CHUNK): AttentionMask {
  if (keyMask.length !== B * Lk) throw new RangeError(`causalMask: keyMask.length = ${keyMask.length}, expected B*Lk = ${B * Lk}`);
  if (Lq > Lk) throw new RangeError(`causalMask: Lq = ${Lq} must be <= Lk = ${Lk}`);
  const off = Lk - Lq;
  const chunks: AttentionChunk[] = [];
  // Equal chunks (no short remainder: products below 2048 outputs take tfjs's slow batched kernel, matmul.ts).
  const n = Math.ceil(Lq / chunk);
  for (let c = 0; c < n; c++) {
    const q0 = Math.round((c * Lq) / n);
    const q1 = Math.round(((c + 1) * Lq) / n);
    const k1 = off + q1;
    const rows = (q1 - q0) * groups;
    const out = new Float32Array(B * rows * k1);
    for (let b = 0; b < B; b++) {
      for (let i = q0; i < q1; i++) {
        const row = (b * rows + (i - q0) * groups) * k1;
        const lim = off + i;
        for (let j = 0; j < k1; j++) {
          if (j > lim || keyMask[b * Lk + j] === 0) out[row + j] = MASK_NEG;
        }
        for (let g = 1; g < groups; g++) out.copyWithin(row + g * k1, row, row + k1);
      }
    }
    chunks.push({ q0, q1, k1, bias: tf.tensor4d(out, [B, 1, rows, k1]) });
  }
  return { Lq, Lk, chunks };
}

/** Frees the bias tensors of a mask. */
export function disposeMask(mask: AttentionMask): void {
  for (const c of mask.chunks) c.bias.dispose();
}

/**
 * Scaled dot-product attention for grouped heads.
 * @param q float32 [B, Lq, H, D] (RoPE applied)
 * @param k float32 [B, KVH, Lk, D] (RoPE applied; includes cached keys)
 * @param v float32 [B, KVH, Lk, D]
 * @param mask from causalMask for these Lq, Lk
 * @returns float32 [B, Lq, H*D] (heads concatenated in HF order h = kvh*G + g)
 * @throws RangeError when the mask was built for other lengths
 */
export function groupedAttention(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, mask: AttentionMask): tf.Tensor3D {
  return tf.tidy(() => {
    const [B, Lq, H, D] = q.shape;
    const [, KVH, Lk] = k.shape;
    if (mask.Lq !== Lq || mask.Lk !== Lk) throw new RangeError(`groupedAttention: mask for Lq=${mask.Lq}, Lk=${mask.Lk}, inputs have Lq=${Lq}, Lk=${Lk}`);
    const G = H / KVH;
    const S = B * KVH;
    // [B, Lq, KVH, G, D] -> [B, KVH, Lq, G, D] -> [B*KVH, Lq*G, D]
    const qg = tf.reshape(tf.transpose(tf.reshape(tf.mul(q, 1 / Math.sqrt(D)), [B, Lq, KVH, G, D]), [0, 2, 1, 3, 4]), [S, Lq * G, D]) as tf.Tensor3D;
    const ks = tf.reshape(k, [S, Lk, D]) as tf.Tensor3D;
    const vs = tf.reshape(v, [S, Lk, D]) as tf.Tensor3D;
    const one = mask.chunks.length === 1;
    const outs = mask.chunks.map((c) => {
      const rows = (c.q1 - c.q0) * G;
      const qc = one ? qg : tf.slice(qg, [0, c.q0 * G, 0], [S, rows, D]);
      const kc = c.k1 === Lk ? ks : tf.slice(ks, [0, 0, 0], [S, c.k1, D]);
      const vc = c.k1 === Lk ? vs : tf.slice(vs, [0, 0, 0], [S, c.k1, D]);
      const scores = tf.add(tf.reshape(bmm(qc as tf.Tensor3D, tf.transpose(kc, [0, 2, 1])), [B, KVH, rows, c.k1]), c.bias);
      const probs = tf.reshape(tf.softmax(scores, -1), [S, rows, c.k1]) as tf.Tensor3D;
      return bmm(probs, vc as tf.Tensor3D); // [B*KVH, rows, D]
    });
    const out = one ? outs[0] : tf.concat(outs, 1);
    return tf.reshape(tf.transpose(tf.reshape(out, [B, KVH, Lq, G, D]), [0, 2, 1, 3, 4]), [B, Lq, H * D]) as tf.Tensor3D;
  });
}
