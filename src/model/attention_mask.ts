/**
 * The causal attention mask of one forward, in query chunks: the additive bias each chunk of queries adds to its
 * scores (attention.ts groupedAttention). Built once per forward on the host and shared by all layers.
 */
import * as tf from '@tensorflow/tfjs';

// Causal chunking: chunk [q0, q1) of the queries multiplies only the keys it may see, [0, Lk - Lq + q1). The
// skipped keys are all masked (their softmax weight is exactly 0 in float32), so real rows are unchanged, and the
// score tensors (whose elementwise passes cost as much as the matmuls at small head sizes) shrink to about
// (C + 1) / (2C) of the square for C chunks.

/** Additive bias value for masked positions (finite, so a fully masked pad row gives a uniform softmax, not NaN). */
export const MASK_NEG = -1e9;

/** Query positions per attention chunk (tuned on the tiny model with bench/update_breakdown.ts). */
export const ATTENTION_CHUNK = 128;

/** Query positions [q0, q1) attending keys [0, k1), with their additive bias float32 [B, 1, (q1 - q0) * G, k1]. */
export interface AttentionChunk {
  q0: number;
  q1: number;
  k1: number;
  bias: tf.Tensor4D;
}

/** The attention mask of one forward (shared by all layers): its query chunks for Lq queries over Lk (cached + new) keys. */
export interface AttentionMask {
  Lq: number;
  Lk: number;
  chunks: AttentionChunk[];
}

/**
 * The chunked causal attention mask over keys with a key mask: query i (of Lq) sits at key index (Lk - Lq + i);
 * it may attend key j when j <= Lk - Lq + i and keyMask[b, j] = 1.
 * @param keyMask row-major [B * Lk] of 1 (real token) / 0 (pad)
 * @param groups G = num_attention_heads / num_key_value_heads (each query row is repeated G times)
 * @param chunk most query positions per chunk (default ATTENTION_CHUNK; >= Lq gives one chunk over all keys)
 * @returns the mask; its bias tensors are owned by the caller (`disposeMask`)
 * @throws RangeError when keyMask.length != B * Lk or Lq > Lk
 */
export function causalMask(
  keyMask: ArrayLike<number>,
  B: number,
  Lq: number,
  Lk: number,
  groups: number,
  chunk = ATTENTION_CHUNK,
): AttentionMask {
  if (keyMask.length !== B * Lk) throw new RangeError(`causalMask: keyMask.length = ${keyMask.length}, expected B*Lk = ${B * Lk}`);
  if (Lq > Lk) throw new RangeError(`causalMask: Lq = ${Lq} must be <= Lk = ${Lk}`);
  const off = Lk - Lq;
  const chunks: AttentionChunk[] = [];
  // Equal chunks: a short remainder's small products would run on the slower path of `bmm` (kernels.ts).
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
