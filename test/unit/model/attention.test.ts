import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { groupedAttention } from '../../../src/model/attention';
import { causalMask, disposeMask } from '../../../src/model/attention_mask';
import { embedLookup } from '../../../src/model/kernels';
import { initTestBackend } from '../../helpers/backend';

before(async () => {
  await initTestBackend();
});

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number, what: string): void => {
  assert.equal(a.length, b.length, `${what} length`);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
};

/** Attention output and gradients (q, k, v) of sum(out * w) with the queries split into chunks of `chunk`. */
function attend(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, w: tf.Tensor, keyMask: number[], chunk: number) {
  const [B, Lq, H] = q.shape;
  const mask = causalMask(keyMask, B, Lq, k.shape[2], H / k.shape[1], chunk);
  try {
    const out = groupedAttention(q, k, v, mask);
    const grads = tf.grads((a, b, c) => tf.sum(tf.mul(groupedAttention(a as tf.Tensor4D, b as tf.Tensor4D, c as tf.Tensor4D, mask), w)))([
      q,
      k,
      v,
    ]);
    return { out, grads, chunks: mask.chunks.length };
  } finally {
    disposeMask(mask);
  }
}

test('chunked causal attention equals one chunk over all keys: outputs and q/k/v gradients (right padding, with a cache)', () => {
  // B=2, H=4 query heads on KVH=2 kv heads (G=2), D=8; Lq=11 new queries after 3 cached keys (Lk=14); row 1 has 2 pad keys at the end.
  const [B, Lq, Lk, H, KVH, D] = [2, 11, 14, 4, 2, 8];
  const q = tf.randomNormal([B, Lq, H, D], 0, 1, 'float32', 1) as tf.Tensor4D;
  const k = tf.randomNormal([B, KVH, Lk, D], 0, 1, 'float32', 2) as tf.Tensor4D;
  const v = tf.randomNormal([B, KVH, Lk, D], 0, 1, 'float32', 3) as tf.Tensor4D;
  const keyMask = [...new Array(Lk).fill(1), ...new Array(Lk - 2).fill(1), 0, 0];
  // The loss ignores row 1's last 2 queries (pad positions, whose output is meaningless).
  const w = tf
    .tensor4d(
      Array.from({ length: B * Lq * H * D }, (_, i) =>
        Math.floor(i / (Lq * H * D)) === 1 && Math.floor(i / (H * D)) % Lq >= Lq - 2 ? 0 : Math.sin(i),
      ),
      [B, Lq, H * D, 1],
    )
    .reshape([B, Lq, H * D]);
  const one = attend(q, k, v, w, keyMask, Lq);
  const chunked = attend(q, k, v, w, keyMask, 3);
  assert.equal(one.chunks, 1);
  assert.equal(chunked.chunks, 4); // 11 queries in chunks of 3, 3, 2, 3
  const wv = w.dataSync();
  const outOne = one.out.dataSync().map((x, i) => x * (wv[i] === 0 ? 0 : 1));
  const outChunked = chunked.out.dataSync().map((x, i) => x * (wv[i] === 0 ? 0 : 1));
  close(outChunked, outOne, 1e-5, 'out');
  ['dq', 'dk', 'dv'].forEach((name, i) => close(chunked.grads[i].dataSync(), one.grads[i].dataSync(), 1e-4, name));
});

test('causalMask: chunk j of queries sees keys [0, Lk - Lq + q1) with pad keys and future keys masked', () => {
  const m = causalMask([1, 1, 1, 0, 1, 1, 1, 1], 2, 4, 4, 1, 2);
  assert.deepEqual(
    m.chunks.map((c) => [c.q0, c.q1, c.k1]),
    [
      [0, 2, 2],
      [2, 4, 4],
    ],
  );
  const neg = (x: number) => (x === 0 ? 0 : 1);
  assert.deepEqual([...m.chunks[1].bias.dataSync()].map(neg), [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0]);
  disposeMask(m);
  assert.throws(() => causalMask([1, 1], 1, 3, 2, 1), /Lq = 3 must be <= Lk = 2/);
});

test('embedLookup: the one-hot product equals a gather and its gradient a scatter-add of dy rows', () => {
  const w = tf.randomNormal([7, 5], 0, 1, 'float32', 4) as tf.Tensor2D;
  const ids = tf.tensor1d([3, 0, 3, 6, 1], 'int32');
  const dy = tf.randomNormal([5, 5], 0, 1, 'float32', 5);
  close(embedLookup(w, ids).dataSync(), tf.gather(w, ids).dataSync(), 0, 'rows');
  const [g] = tf.grads((x) => tf.sum(tf.mul(embedLookup(x as tf.Tensor2D, ids), dy)))([w]);
  const expected = new Float32Array(35);
  const d = dy.dataSync();
  [3, 0, 3, 6, 1].forEach((id, n) => {
    for (let e = 0; e < 5; e++) expected[id * 5 + e] += d[n * 5 + e];
  });
  close(g.dataSync(), expected, 1e-6, 'dW');
});

test('zero-copy Identity: a clone shares memory, and disposing either keeps the other readable', () => {
  const a = tf.tensor1d([1, 2, 3]);
  const b = tf.clone(a);
  assert.equal(b.dataId, a.dataId); // the same backend buffer, reference counted
  a.dispose();
  assert.deepEqual([...b.dataSync()], [1, 2, 3]);
  b.dispose();
});
