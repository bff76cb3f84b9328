/**
 * Grouped-query attention (GQA; Ainslie et al. 2023) of the Qwen2 decoder (qwen2.ts), over the chunked causal mask
 * of attention_mask.ts, in the products each backend runs best (kernels.ts).
 */
import * as tf from '@tensorflow/tfjs';
import type { AttentionMask } from './attention_mask';
import { bmm } from './kernels';

// All heads in one batched matmul per query chunk. The H query
// heads are viewed as [KVH, G] (G = H / KVH; HF's `repeat_kv` maps query head h to kv head floor(h / G)); the G
// heads of a position are stacked along the query axis (row r = position * G + g), so scores =
// Q[B*KVH, Lq*G, D] @ K[B*KVH, Lk, D]^T needs no repeated K/V.
// The queries go in chunks, each over only the keys it may see (attention_mask.ts causalMask).

/**
 * Scaled dot-product attention for grouped heads: q float32 [B, Lq, H, D], k and v [B, KVH, Lk, D] (q and k with
 * RoPE applied; k and v include cached keys), the mask from causalMask for these Lq, Lk.
 * @returns float32 [B, Lq, H*D] (heads concatenated in HF order h = kvh*G + g)
 * @throws RangeError when the mask was built for other lengths
 */
export function groupedAttention(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, mask: AttentionMask): tf.Tensor3D {
  const [, Lq] = q.shape;
  const [, , Lk] = k.shape;
  if (mask.Lq !== Lq || mask.Lk !== Lk)
    throw new RangeError(`groupedAttention: mask for Lq=${mask.Lq}, Lk=${mask.Lk}, inputs have Lq=${Lq}, Lk=${Lk}`);
  return tf.getBackend() === 'wasm' ? flatAttention(q, k, v, mask) : batchedAttention(q, k, v, mask);
}

/**
 * Attention in rank-4 batched matmuls over [B, KVH] (native TensorFlow's BatchMatMulV2 takes any batch rank and
 * transposes K itself), so keys and the mask need no reshape or transpose. A single query position (a decode
 * step) makes the head reorders plain reshapes.
 */
function batchedAttention(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, mask: AttentionMask): tf.Tensor3D {
  return tf.tidy(() => {
    const [B, Lq, H, D] = q.shape;
    const [, KVH, Lk] = k.shape;
    const G = H / KVH;
    const scaled = tf.mul(q, 1 / Math.sqrt(D));
    // [B, Lq, KVH, G, D] -> [B, KVH, Lq * G, D]
    const qg = (
      Lq === 1
        ? tf.reshape(scaled, [B, KVH, G, D])
        : tf.reshape(tf.transpose(tf.reshape(scaled, [B, Lq, KVH, G, D]), [0, 2, 1, 3, 4]), [B, KVH, Lq * G, D])
    ) as tf.Tensor4D;
    const one = mask.chunks.length === 1;
    const outs = mask.chunks.map((c) => {
      const rows = (c.q1 - c.q0) * G;
      const qc = one ? qg : tf.slice(qg, [0, 0, c.q0 * G, 0], [B, KVH, rows, D]);
      const kc = c.k1 === Lk ? k : tf.slice(k, [0, 0, 0, 0], [B, KVH, c.k1, D]);
      const vc = c.k1 === Lk ? v : tf.slice(v, [0, 0, 0, 0], [B, KVH, c.k1, D]);
      const probs = tf.softmax(tf.add(tf.matMul(qc, kc, false, true), c.bias), -1);
      return tf.matMul(probs, vc); // [B, KVH, rows, D]
    });
    const out = one ? outs[0] : tf.concat(outs, 2);
    return (
      Lq === 1
        ? tf.reshape(out, [B, 1, H * D])
        : tf.reshape(tf.transpose(tf.reshape(out, [B, KVH, Lq, G, D]), [0, 2, 1, 3, 4]), [B, Lq, H * D])
    ) as tf.Tensor3D;
  });
}

/** Attention as 3-D products over B * KVH slices (`bmm`: XNNPACK on wasm). */
function flatAttention(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, mask: AttentionMask): tf.Tensor3D {
  return tf.tidy(() => {
    const [B, Lq, H, D] = q.shape;
    const [, KVH, Lk] = k.shape;
    const G = H / KVH;
    const S = B * KVH;
    // [B, Lq, KVH, G, D] -> [B, KVH, Lq, G, D] -> [B*KVH, Lq*G, D]
    const qg = tf.reshape(tf.transpose(tf.reshape(tf.mul(q, 1 / Math.sqrt(D)), [B, Lq, KVH, G, D]), [0, 2, 1, 3, 4]), [
      S,
      Lq * G,
      D,
    ]) as tf.Tensor3D;
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
