import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { tinyPreset } from '../../../src/model/config';
import { generate } from '../../../src/model/generate';
import { tokenLogProbs } from '../../../src/model/logprobs';
import { Qwen2 } from '../../../src/model/qwen2';
import { Rng } from '../../../src/util/rng';
import { initTestBackend } from '../../helpers/backend';

before(async () => {
  await initTestBackend();
});

/** Log-probs of seq[from..] by full (uncached) forward. */
function recompute(m: Qwen2, seq: number[], from: number): number[] {
  return tf.tidy(() => {
    const ids = tf.tensor2d([seq], [1, seq.length], 'int32');
    const { logp } = tokenLogProbs(m, ids, tf.onesLike(ids).toFloat() as tf.Tensor2D);
    return Array.from(logp.dataSync()).slice(from - 1);
  });
}

function argmaxNext(m: Qwen2, seq: number[]): number {
  return tf.tidy(() => {
    const ids = tf.tensor2d([seq], [1, seq.length], 'int32');
    const lg = m.forward(ids, tf.onesLike(ids).toFloat() as tf.Tensor2D);
    return tf.argMax(lg.slice([0, seq.length - 1, 0], [1, 1, -1]).reshape([-1])).dataSync()[0];
  });
}

const contexts = [
  [1, 5, 6, 7, 8],
  [1, 9],
  [1, 10, 11, 12, 13, 14, 15, 16],
];

test('greedy KV-cache generation equals full-forward recompute (tokens and log-probs within 1e-4)', () => {
  const m = Qwen2.random(tinyPreset(101), 21);
  const r = generate(m, contexts, { maxNewTokens: [6, 9, 4], doSample: false, stopIds: [] });
  contexts.forEach((c, i) => {
    assert.equal(r.tokens[i].length, [6, 9, 4][i]);
    const seq = [...c];
    for (const t of r.tokens[i]) {
      assert.equal(t, argmaxNext(m, seq));
      seq.push(t);
    }
    const lp = recompute(m, seq, c.length);
    lp.forEach((x, j) => assert.ok(Math.abs(x - r.logprobs[i][j]) < 1e-4, `row ${i} tok ${j}: ${x} vs ${r.logprobs[i][j]}`));
  });
  m.dispose();
});

test('sampled generation: log-probs match tokenLogProbs; per-row Rng makes rows independent of the batch', () => {
  const m = Qwen2.random(tinyPreset(101), 22);
  const opts = { temperature: 0.8, topP: 0.9, topK: 50, stopIds: [2] };
  const all = generate(m, contexts, { ...opts, maxNewTokens: 12, rngs: contexts.map((_, i) => new Rng(5, i)) });
  contexts.forEach((c, i) => {
    const lp = recompute(m, [...c, ...all.tokens[i]], c.length);
    lp.forEach((x, j) => assert.ok(Math.abs(x - all.logprobs[i][j]) < 1e-4));
    const stopAt = all.tokens[i].indexOf(2);
    assert.ok(stopAt === -1 || stopAt === all.tokens[i].length - 1, 'stop id ends the row');
  });
  const again = generate(m, contexts, { ...opts, maxNewTokens: 12, rngs: contexts.map((_, i) => new Rng(5, i)) });
  assert.deepEqual(again.tokens, all.tokens);
  const alone = generate(m, [contexts[1]], { ...opts, maxNewTokens: 12, rngs: [new Rng(5, 1)] });
  assert.deepEqual(alone.tokens[0], all.tokens[1]);
  m.dispose();
});

test('stop ids end a row (kept in its tokens); zero budget gives an empty row', () => {
  const m = Qwen2.random(tinyPreset(101), 23);
  const greedy = generate(m, [contexts[0]], { maxNewTokens: 5, doSample: false, stopIds: [] });
  const first = greedy.tokens[0][0];
  const r = generate(m, [contexts[0], contexts[1]], { maxNewTokens: [5, 0], doSample: false, stopIds: [first] });
  assert.deepEqual(r.tokens, [[first], []]);
  assert.deepEqual(r.logprobs[1], []);
  assert.throws(() => generate(m, [[]], { maxNewTokens: 1, doSample: false, stopIds: [] }), /contexts\[0\] is empty/);
  assert.throws(() => generate(m, [[1]], { maxNewTokens: 1, stopIds: [] }), /rngs/);
  m.dispose();
});

test('no tensor leaks across generate calls', () => {
  const m = Qwen2.random(tinyPreset(101), 24);
  const run = () =>
    generate(m, contexts, { maxNewTokens: [3, 7, 5], temperature: 1, stopIds: [2], rngs: contexts.map((_, i) => new Rng(1, i)) });
  run();
  const n = tf.memory().numTensors;
  run();
  run();
  assert.equal(tf.memory().numTensors, n);
  m.dispose();
});
