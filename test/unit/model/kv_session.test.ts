import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { tinyPreset } from '../../../src/model/config';
import { type GenerateOptions, generate } from '../../../src/model/generate';
import { KvSession } from '../../../src/model/kv_session';
import { Qwen2 } from '../../../src/model/qwen2';
import { Rng } from '../../../src/util/rng';
import { initTestBackend } from '../../helpers/backend';

before(async () => {
  await initTestBackend();
});

/** Three turns of a multi-turn batch: each row's next context = context + reply + an observation of its own length. */
function playTurns(m: Qwen2, base: Omit<GenerateOptions, 'maxNewTokens'>, session?: KvSession) {
  let contexts = [
    [1, 5, 6, 7, 8],
    [1, 9],
    [1, 10, 11, 12, 13, 14, 15, 16],
    [1, 20, 21],
  ];
  let rowIds = [0, 1, 2, 3];
  const turns: Array<{ tokens: number[][]; logprobs: number[][] }> = [];
  for (let turn = 0; turn < 3; turn++) {
    const rngs = rowIds.map((id) => new Rng(7, id, turn));
    const out = generate(m, contexts, { ...base, maxNewTokens: rowIds.map((id) => 3 + ((id + turn) % 4)), rngs, session, rowIds });
    turns.push(out);
    // Row 2 ends after the first turn (an episode that finished); the others get observations of 1..4 ids.
    const next = rowIds
      .map((id, i) => ({ id, ctx: [...contexts[i], ...out.tokens[i], ...Array.from({ length: 1 + ((id + turn) % 4) }, (_, j) => 30 + j)] }))
      .filter((r) => !(turn === 0 && r.id === 2));
    contexts = next.map((r) => r.ctx);
    rowIds = next.map((r) => r.id);
  }
  return turns;
}

function assertSame(a: ReturnType<typeof playTurns>, b: ReturnType<typeof playTurns>): void {
  a.forEach((turn, t) => {
    assert.deepEqual(turn.tokens, b[t].tokens, `turn ${t} tokens`);
    turn.logprobs.forEach((row, i) =>
      row.forEach((x, j) =>
        assert.ok(Math.abs(x - b[t].logprobs[i][j]) < 1e-4, `turn ${t} row ${i} token ${j}: ${x} vs ${b[t].logprobs[i][j]}`),
      ),
    );
  });
}

test('KV caches kept across turns give the same tokens and log-probs as prefilling whole contexts (greedy and sampled)', () => {
  const m = Qwen2.random(tinyPreset(101), 31);
  for (const base of [
    { doSample: false, stopIds: [2] },
    { temperature: 1, topP: 0.9, stopIds: [2, 3] },
  ]) {
    const session = new KvSession();
    const cached = playTurns(m, base, session);
    session.clear();
    assertSame(cached, playTurns(m, base));
  }
  m.dispose();
});

test('a KvSession frees every tensor it held on clear(); generate keeps none of its own', () => {
  const m = Qwen2.random(tinyPreset(101), 32);
  playTurns(m, { doSample: false, stopIds: [2] }); // the model's lazily made constants (weight transposes, RoPE tables)
  const before = tf.memory().numTensors;
  const session = new KvSession();
  playTurns(m, { doSample: false, stopIds: [2] }, session);
  assert.ok(tf.memory().numTensors > before, "the session holds the last turn's caches");
  session.clear();
  assert.equal(tf.memory().numTensors, before);
  m.dispose();
});

test('a context that does not extend the cached prefix is prefilled whole, with the same result', () => {
  const m = Qwen2.random(tinyPreset(101), 33);
  const session = new KvSession();
  const opts = { doSample: false, stopIds: [], maxNewTokens: 4 };
  const first = generate(
    m,
    [
      [1, 5, 6],
      [1, 7],
    ],
    { ...opts, session, rowIds: [0, 1] },
  );
  const edited = [
    [1, 5, 9, ...first.tokens[0], 40],
    [1, 7, ...first.tokens[1], 41],
  ]; // row 0 rewrote its history
  const again = generate(m, edited, { ...opts, session, rowIds: [0, 1] });
  const plain = generate(m, edited, opts);
  assert.deepEqual(again.tokens, plain.tokens);
  session.clear();
  m.dispose();
});

test('generate rejects a rowIds list of the wrong length, naming it', () => {
  const m = Qwen2.random(tinyPreset(101), 34);
  assert.throws(
    () => generate(m, [[1, 2]], { doSample: false, stopIds: [], maxNewTokens: 2, session: new KvSession(), rowIds: [0, 1] }),
    /rowIds has 2 entries for 1 rows/,
  );
  m.dispose();
});
