/**
 * sampleToken against a reference written as HF's warpers read: sort the whole vocabulary (logit descending,
 * ties by lower id), temperature, top-k, top-p (keep up to the first token whose cumulative probability
 * reaches top_p), then one draw walked in that order. The sampler, which never sorts the whole vocabulary,
 * must pick the same token from the same draw, for every setting, with ties, peaked and flat rows.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logSumExp, type SamplingOptions, sampleToken } from '../../../src/model/sampling';
import { Rng } from '../../../src/util/rng';
import { referenceSample } from '../../helpers/reference_sampler';

/** A row of V logits: normal noise times `spread`, with every `tieEvery`-th logit repeated from its neighbour. */
function row(V: number, spread: number, tieEvery: number, rng: Rng): Float32Array {
  const out = new Float32Array(V);
  for (let i = 0; i < V; i++) out[i] = i > 0 && i % tieEvery === 0 ? out[i - 1] : spread * rng.normal();
  return out;
}

const SETTINGS: SamplingOptions[] = [
  {},
  { temperature: 0.7 },
  { topK: 1 },
  { topK: 5, temperature: 1.3 },
  { topK: 50 },
  { topP: 0.9 },
  { topP: 0.3, temperature: 0.5 },
  { topP: 0.999 },
  { topK: 40, topP: 0.8, temperature: 0.9 },
];

test('sampleToken picks the token the sort-based reference picks from the same draw: every setting, flat, peaked and tied rows', () => {
  const gen = new Rng(7, 'rows');
  let draws = 0;
  for (const V of [1, 2, 3, 33, 64, 500, 5000]) {
    for (const [spread, tieEvery] of [
      [0.01, 1_000_000], // near-uniform: the draw lands anywhere in the ranking
      [1, 3], // many ties
      [8, 1_000_000], // peaked: a trained policy
      [0, 1_000_000], // all equal
    ]) {
      const logits = row(V, spread, tieEvery, gen);
      for (const opts of SETTINGS) {
        for (let d = 0; d < 8; d++) {
          const seed = [V, spread, JSON.stringify(opts), d];
          const want = referenceSample(logits, opts, new Rng(...seed));
          const got = sampleToken(logits, 0, V, opts, new Rng(...seed));
          assert.equal(got.token, want, `V ${V}, spread ${spread}, ties every ${tieEvery}, ${JSON.stringify(opts)}, draw ${d}`);
          draws++;
        }
      }
    }
  }
  assert.equal(draws, 7 * 4 * SETTINGS.length * 8);
});

test('sampleToken at a Qwen2.5 vocabulary (151,936) picks as the reference does, from an offset into a batch of rows', () => {
  const V = 151_936;
  const gen = new Rng(11, 'big');
  const batch = new Float32Array(2 * V);
  batch.set(row(V, 0.05, 1_000_000, gen), 0); // an untrained model's flat row
  batch.set(row(V, 6, 1_000_000, gen), V);
  for (const opts of [{}, { topK: 50, topP: 0.95, temperature: 0.8 }, { topP: 0.9 }]) {
    for (let b = 0; b < 2; b++) {
      for (let d = 0; d < 3; d++) {
        const want = referenceSample(batch.subarray(b * V, (b + 1) * V), opts, new Rng(b, d));
        assert.equal(sampleToken(batch, b * V, V, opts, new Rng(b, d)).token, want, `row ${b}, ${JSON.stringify(opts)}, draw ${d}`);
      }
    }
  }
});

test('sampleToken: greedy, top-k = 1, top-p keeps the nucleus; logprob is the raw one', () => {
  const logits = [Math.log(0.5), Math.log(0.3), Math.log(0.2)];
  const rng = new Rng(1);
  assert.equal(sampleToken(logits, 0, 3, { doSample: false }, undefined).token, 0);
  for (let i = 0; i < 20; i++) assert.equal(sampleToken(logits, 0, 3, { topK: 1 }, rng).token, 0);
  // top_p = 0.6: 0.5 < 0.6 so token 1 is also kept; token 2 (mass before 0.8 >= 0.6) is dropped.
  const seen = new Set<number>();
  for (let i = 0; i < 200; i++) seen.add(sampleToken(logits, 0, 3, { topP: 0.6 }, rng).token);
  assert.deepEqual([...seen].sort(), [0, 1]);
  const r = sampleToken(logits, 0, 3, { topP: 0.6, temperature: 0.5 }, rng);
  assert.ok(Math.abs(r.logprob - Math.log([0.5, 0.3, 0.2][r.token])) < 1e-9);
});

test('sampleToken refuses top_p outside (0, 1] and a negative top_k, naming the value and what is allowed', () => {
  assert.throws(() => sampleToken([0, 1], 0, 2, { topP: 0 }, new Rng(1)), /topP = 0 is invalid; allowed: \(0, 1\]/);
  assert.throws(() => sampleToken([0, 1], 0, 2, { topK: -1 }, new Rng(1)), /topK = -1 is invalid; allowed: an integer >= 0/);
});

test('sampleToken: the log-prob of the sampled token is its raw log-softmax, whatever the temperature', () => {
  const gen = new Rng(3, 'lse');
  const logits = row(500, 2, 7, gen);
  for (const temperature of [1, 0.6, 1.4]) {
    for (let d = 0; d < 5; d++) {
      const { token, logprob } = sampleToken(logits, 0, 500, { temperature }, new Rng(temperature, d));
      assert.equal(logprob, logits[token] - logSumExp(logits, 0, 500));
    }
  }
});
