/**
 * Token log-probs and entropies: the closed-form gradient of logProbAndEntropy against torch autograd through
 * ROLL's formulas (test/fixtures/hf/logprob_fixtures.py wrote the fixture), and tokenLogProbs against the
 * one-hot formulation it replaced (log_softmax, a one-hot product and p * log p through autograd): the same
 * log-probs and entropies, and the same gradient for every weight of a model.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { tinyPreset } from '../../../src/model/config';
import { logProbAndEntropy, tokenLogProbs } from '../../../src/model/logprobs';
import { Qwen2 } from '../../../src/model/qwen2';
import { initTestBackend } from '../../helpers/backend';

before(async () => {
  await initTestBackend();
});

interface Fixture {
  N: number;
  V: number;
  logits: number[];
  targets: number[];
  a: number[];
  b: number[];
  logp: number[];
  entropy: number[];
  grad: number[];
}

/** Largest |x - y| over two equally long lists. */
function maxDiff(x: ArrayLike<number>, y: ArrayLike<number>): number {
  assert.equal(x.length, y.length);
  let d = 0;
  for (let i = 0; i < x.length; i++) d = Math.max(d, Math.abs(x[i] - y[i]));
  return d;
}

/** Every variable's gradient in `got` equals its gradient in `want` to 1e-4 of the latter's largest entry. */
function sameGradients(vars: tf.Variable[], got: tf.NamedTensorMap, want: tf.NamedTensorMap): void {
  for (const v of vars) {
    const scale = Math.max(1e-3, ...Array.from(want[v.name].dataSync(), Math.abs));
    const d = maxDiff(got[v.name].dataSync(), want[v.name].dataSync());
    assert.ok(d / scale < 1e-4, `${v.name}: gradient differs by ${d} (largest entry ${scale})`);
  }
}

test('logProbAndEntropy: values and the gradient of a weighted sum equal torch autograd through ROLL formulas', () => {
  const f = JSON.parse(readFileSync('test/fixtures/hf/logprob_entropy.json', 'utf8')) as Fixture;
  const logits = tf.tensor2d(f.logits, [f.N, f.V]);
  const targets = tf.tensor1d(f.targets, 'int32');
  const weights = tf.tensor2d(
    f.a.map((a, n) => [a, f.b[n]]),
    [f.N, 2],
  );
  const both = logProbAndEntropy(logits, targets);
  const [logp, entropy] = tf.unstack(both, 1);
  assert.ok(maxDiff(logp.dataSync(), f.logp) < 1e-5, `logp ${maxDiff(logp.dataSync(), f.logp)}`);
  assert.ok(maxDiff(entropy.dataSync(), f.entropy) < 1e-5, `entropy ${maxDiff(entropy.dataSync(), f.entropy)}`);
  const grad = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(logProbAndEntropy(x as tf.Tensor2D, targets), weights)))(logits);
  const d = maxDiff(grad.dataSync(), f.grad);
  assert.ok(d < 1e-5, `gradient differs from torch's by ${d}`);
  tf.dispose([logits, targets, weights, both, logp, entropy, grad]);
});

/** The formulation tokenLogProbs used before: autograd through log_softmax, a one-hot product and p * log p. */
function oneHotLogProbs(m: Qwen2, ids: tf.Tensor2D, mask: tf.Tensor2D): { logp: tf.Tensor2D; entropy: tf.Tensor2D } {
  const [B, L] = ids.shape;
  const V = m.config.vocab_size;
  return tf.tidy(() => {
    const lsm = tf.logSoftmax(tf.slice(m.forward(ids, mask), [0, 0, 0], [B, L - 1, V]), -1);
    const oh = tf.cast(tf.oneHot(tf.cast(tf.slice(ids, [0, 1], [B, L - 1]), 'int32'), V), 'float32');
    return {
      logp: tf.sum(tf.mul(lsm, oh), -1) as tf.Tensor2D,
      entropy: tf.neg(tf.sum(tf.mul(tf.exp(lsm), lsm), -1)) as tf.Tensor2D,
    };
  });
}

test('tokenLogProbs equals the one-hot formulation: log-probs, entropies and every weight gradient', () => {
  const m = Qwen2.random({ ...tinyPreset(101), tie_word_embeddings: false }, 21);
  const rows = [
    [1, 5, 9, 13, 17, 2, 40],
    [1, 7, 2, 0, 0, 0, 0],
  ];
  const ids = tf.tensor2d(rows, [2, 7], 'int32');
  const mask = tf.tensor2d(
    rows.map((r, b) => r.map((_, t) => (b === 1 && t > 2 ? 0 : 1))),
    [2, 7],
  );
  const loss = (f: typeof oneHotLogProbs) => () => {
    const { logp, entropy } = f(m, ids, mask);
    const w = tf.slice(mask, [0, 1], [2, 6]);
    return tf.sum(tf.mul(tf.sub(tf.mul(logp, 0.7), tf.mul(entropy, 0.05)), w)) as tf.Scalar;
  };
  const vars = [...m.trainableVariables().values()];
  const got = tf.variableGrads(loss(tokenLogProbs), vars);
  const want = tf.variableGrads(loss(oneHotLogProbs), vars);
  assert.ok(Math.abs(got.value.dataSync()[0] - want.value.dataSync()[0]) < 1e-5);
  const a = tokenLogProbs(m, ids, mask);
  const b = oneHotLogProbs(m, ids, mask);
  assert.ok(maxDiff(a.logp.dataSync(), b.logp.dataSync()) < 1e-5);
  assert.ok(maxDiff(a.entropy.dataSync(), b.entropy.dataSync()) < 1e-5);
  sameGradients(vars, got.grads, want.grads);
  tf.dispose([
    ids,
    mask,
    got.value,
    want.value,
    a.logp,
    a.entropy,
    b.logp,
    b.entropy,
    ...Object.values(got.grads),
    ...Object.values(want.grads),
  ]);
  m.dispose();
});

test('tokenLogProbs at the response positions only: the same values there, zeros elsewhere, the same gradient of a masked loss', () => {
  const m = Qwen2.random(tinyPreset(101), 22);
  const rows = [
    [1, 5, 9, 13, 17, 2, 40],
    [1, 7, 2, 30, 31, 0, 0],
  ];
  const ids = tf.tensor2d(rows, [2, 7], 'int32');
  const mask = tf.tensor2d(
    rows.map((r, b) => r.map((_, t) => (b === 1 && t > 4 ? 0 : 1))),
    [2, 7],
  );
  const at = tf.tensor2d(
    [
      [0, 0, 1, 1, 0, 1],
      [0, 1, 1, 1, 0, 0],
    ],
    [2, 6],
  );
  const loss = (opts: { at?: tf.Tensor2D }) => () => {
    const { logp, entropy } = tokenLogProbs(m, ids, mask, opts);
    return tf.sum(tf.mul(tf.sub(logp, tf.mul(entropy, 0.1)), at)) as tf.Scalar;
  };
  const vars = [...m.trainableVariables().values()];
  const got = tf.variableGrads(loss({ at }), vars);
  const want = tf.variableGrads(loss({}), vars);
  assert.ok(Math.abs(got.value.dataSync()[0] - want.value.dataSync()[0]) < 1e-5);
  sameGradients(vars, got.grads, want.grads);
  const some = tokenLogProbs(m, ids, mask, { at });
  const all = tokenLogProbs(m, ids, mask);
  const used = at.dataSync();
  const [s, a] = [some.logp.dataSync(), all.logp.dataSync()];
  used.forEach((u, i) => assert.ok(u === 1 ? Math.abs(s[i] - a[i]) < 1e-5 : s[i] === 0, `position ${i}: ${s[i]} vs ${a[i]}`));
  assert.throws(() => tokenLogProbs(m, ids, mask, { at: mask }), /at has shape \[2,7\], expected \[2, 6\]/);
  tf.dispose([
    ids,
    mask,
    at,
    got.value,
    want.value,
    some.logp,
    some.entropy,
    all.logp,
    all.entropy,
    ...Object.values(got.grads),
    ...Object.values(want.grads),
  ]);
  m.dispose();
});

test('with entropyGradient false the entropy is the same and the gradient is that of the log-probs alone', () => {
  const f = JSON.parse(readFileSync('test/fixtures/hf/logprob_entropy.json', 'utf8')) as Fixture;
  const logits = tf.tensor2d(f.logits, [f.N, f.V]);
  const targets = tf.tensor1d(f.targets, 'int32');
  const onlyLogp = tf.tensor2d(
    f.a.map((a) => [a, 0]),
    [f.N, 2],
  );
  const withEntropy = tf.tensor2d(
    f.a.map((a, n) => [a, f.b[n]]),
    [f.N, 2],
  );
  const both = logProbAndEntropy(logits, targets, false);
  assert.ok(maxDiff(tf.unstack(both, 1)[1].dataSync(), f.entropy) < 1e-5);
  // The entropy's weight is ignored: the gradient equals the full one's with the entropy weighted 0.
  const without = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(logProbAndEntropy(x as tf.Tensor2D, targets, false), withEntropy)))(logits);
  const reference = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(logProbAndEntropy(x as tf.Tensor2D, targets), onlyLogp)))(logits);
  assert.ok(maxDiff(without.dataSync(), reference.dataSync()) < 1e-7);
  tf.dispose([logits, targets, onlyLogp, withEntropy, both, without, reference]);
});
