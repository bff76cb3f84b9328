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
    const qg = groupHeads(tf.mul(q, 1 / Math.sqrt(D)) as tf.Tensor4D, k.shape[1]);
    return ungroupHeads(chunkedAttention(qg, k, v, mask), B, Lq, H);
  });
}

/**
 * Queries (or their gradients) with the G = H / KVH heads of a position stacked along the query axis:
 * [B, Lq, H, D] -> [B, KVH, Lq * G, D] (row r = position * G + g; a reshape when Lq = 1).
 */
export function groupHeads(q: tf.Tensor4D, KVH: number): tf.Tensor4D {
  const [B, Lq, H, D] = q.shape;
  const G = H / KVH;
  if (Lq === 1) return tf.reshape(q, [B, KVH, G, D]) as tf.Tensor4D;
  return tf.reshape(tf.transpose(tf.reshape(q, [B, Lq, KVH, G, D]), [0, 2, 1, 3, 4]), [B, KVH, Lq * G, D]) as tf.Tensor4D;
}

/** The inverse reorder of `groupHeads`: [B, KVH, Lq * G, D] -> [B, Lq, H * D]. */
export function ungroupHeads(out: tf.Tensor4D, B: number, Lq: number, H: number): tf.Tensor3D {
  const [, KVH, , D] = out.shape;
  if (Lq === 1) return tf.reshape(out, [B, 1, H * D]) as tf.Tensor3D;
  return tf.reshape(tf.transpose(tf.reshape(out, [B, KVH, Lq, H / KVH, D]), [0, 2, 1, 3, 4]), [B, Lq, H * D]) as tf.Tensor3D;
}

/** The chunk's keys (or values) [B, KVH, k1, D] of x [B, KVH, Lk, D]. */
function keysOf(x: tf.Tensor4D, k1: number): tf.Tensor4D {
  const [B, KVH, Lk, D] = x.shape;
  return k1 === Lk ? x : (tf.slice(x, [0, 0, 0, 0], [B, KVH, k1, D]) as tf.Tensor4D);
}

/** The chunk's rows [B, KVH, rows, D] of grouped queries (or their gradient) x [B, KVH, Lq * G, D]. */
function rowsOf(x: tf.Tensor4D, mask: AttentionMask, c: AttentionMask['chunks'][number], G: number): tf.Tensor4D {
  const [B, KVH, , D] = x.shape;
  return mask.chunks.length === 1 ? x : (tf.slice(x, [0, 0, c.q0 * G, 0], [B, KVH, (c.q1 - c.q0) * G, D]) as tf.Tensor4D);
}

/** softmax(q k^T + bias) of one chunk: [B, KVH, rows, k1]. */
function chunkProbs(qc: tf.Tensor4D, kc: tf.Tensor4D, bias: tf.Tensor4D): tf.Tensor4D {
  return tf.tidy(() => tf.softmax(tf.add(tf.matMul(qc, kc, false, true), bias), -1) as tf.Tensor4D);
}

/**
 * softmax(qg k^T + bias) v chunk by chunk, each chunk of queries over only the keys it may see.
 * @param qg grouped queries scaled by 1 / sqrt(D), [B, KVH, Lq * G, D] (`groupHeads`); k, v [B, KVH, Lk, D] -> [B, KVH, Lq * G, D]
 */
export function chunkedAttention(qg: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, mask: AttentionMask): tf.Tensor4D {
  const G = qg.shape[2] / mask.Lq;
  // A scope per chunk frees its scores and probabilities before the next chunk's.
  const outs = mask.chunks.map((c) =>
    tf.tidy(() => tf.matMul(chunkProbs(rowsOf(qg, mask, c, G), keysOf(k, c.k1), c.bias), keysOf(v, c.k1))),
  );
  return (outs.length === 1 ? outs[0] : tf.concat(outs, 2)) as tf.Tensor4D;
}

/**
 * The gradient of `chunkedAttention` w.r.t. qg, k and v for the upstream gradient dOut [B, KVH, Lq * G, D], the
 * softmax recomputed chunk by chunk (one more q k^T product instead of keeping every chunk's probabilities).
 * With P = softmax(S): dv = P^T dOut, dS = P * (dP - rowsum(dP * P)) for dP = dOut v^T, dq = dS k, dk = dS^T q.
 */
export function chunkedAttentionGrad(
  qg: tf.Tensor4D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  mask: AttentionMask,
  dOut: tf.Tensor4D,
): { dq: tf.Tensor4D; dk: tf.Tensor4D; dv: tf.Tensor4D } {
  return tf.tidy(() => {
    const G = qg.shape[2] / mask.Lq;
    const Lk = k.shape[2];
    const toLk = (x: tf.Tensor4D, k1: number) =>
      k1 === Lk
        ? x
        : tf.pad(x, [
            [0, 0],
            [0, 0],
            [0, Lk - k1],
            [0, 0],
          ]);
    const dqs: tf.Tensor4D[] = [];
    let dk: tf.Tensor4D | undefined;
    let dv: tf.Tensor4D | undefined;
    for (const c of mask.chunks) {
      // A scope per chunk frees its score-sized temporaries before the next chunk's.
      const [dqc, dkc, dvc] = tf.tidy(() => {
        const [qc, kc, vc, dOutC] = [rowsOf(qg, mask, c, G), keysOf(k, c.k1), keysOf(v, c.k1), rowsOf(dOut, mask, c, G)];
        const p = chunkProbs(qc, kc, c.bias);
        const dvChunk = toLk(tf.matMul(p, dOutC, true, false), c.k1);
        const dP = tf.matMul(dOutC, vc, false, true);
        const rowDot = tf.tidy(() => tf.sum(tf.mul(dP, p), -1, true));
        const dS = tf.tidy(() => tf.mul(p, tf.sub(dP, rowDot)));
        dP.dispose();
        return [tf.matMul(dS, kc), toLk(tf.matMul(dS, qc, true, false), c.k1), dvChunk] as tf.Tensor4D[];
      });
      dqs.push(dqc);
      dk = dk ? (tf.add(dk, dkc) as tf.Tensor4D) : dkc;
      dv = dv ? (tf.add(dv, dvc) as tf.Tensor4D) : dvc;
    }
    const dq = (dqs.length === 1 ? dqs[0] : tf.concat(dqs, 2)) as tf.Tensor4D;
    return { dq, dk: dk as tf.Tensor4D, dv: dv as tf.Tensor4D };
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
