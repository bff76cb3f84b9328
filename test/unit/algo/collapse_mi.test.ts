/** RAGEN-2's template-collapse metrics against RAGEN's own CollapseDetector (test/fixtures/ragen/collapse_cases.json). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { collapseMetrics, firstTurnPairs } from '../../../src/algo/collapse_mi';

interface Case {
  perToken: number[][];
  perSequence: number[][];
  column: number[];
  metrics: Record<string, number>;
}
const fixture = JSON.parse(readFileSync('test/fixtures/ragen/collapse_cases.json', 'utf8')) as { ragen: string; cases: Case[] };

test(`MI, retrieval and entropy estimates equal RAGEN's (${fixture.ragen})`, () => {
  assert.equal(fixture.cases.length, 5);
  for (const [n, c] of fixture.cases.entries()) {
    const got = collapseMetrics(c.perToken, c.perSequence, c.column);
    for (const [key, want] of Object.entries(c.metrics)) {
      assert.ok(key in got, `case ${n}: ${key} missing`);
      // RAGEN averages the retrieval hits in float32
      const tol = key.startsWith('retrieval') ? 1e-7 : 1e-9;
      assert.ok(Math.abs(got[key] - want) <= tol * Math.max(1, Math.abs(want)), `case ${n} ${key}: ${got[key]} vs RAGEN ${want}`);
    }
  }
});

test("the marginal std and z-scores: population std of the marginal log-probs, RAGEN's std_eps 1e-3", () => {
  // Two prompts, two pairs: pair 0 belongs to column 0, pair 1 to column 1.
  const perToken = [
    [-1, -3],
    [-2, -2],
  ];
  const m = collapseMetrics(perToken, perToken, [0, 1]);
  const marginal = [Math.log((Math.exp(-1) + Math.exp(-3)) / 2), -2];
  const std = Math.abs(marginal[0] - marginal[1]) / 2;
  assert.ok(Math.abs(m.marginal_std - std) < 1e-12);
  const gaps = [-1 - marginal[0], -2 - marginal[1]];
  assert.ok(Math.abs(m.mi_zscore - (gaps[0] + gaps[1]) / 2 / (std + 1e-3)) < 1e-12);
  assert.equal(m.retrieval_accuracy, 0.5, 'pair 1 ties: the first column wins (as torch.argmax), not its own');
});

test('first-turn pairs: the prompt before the first response token, the first run of response tokens, one column per distinct prompt', () => {
  const pairs = firstTurnPairs([
    { inputIds: [1, 2, 3, 4, 5, 6, 7], responseMask: [0, 0, 1, 1, 0, 1, 0] },
    { inputIds: [1, 2, 9, 8], responseMask: [0, 0, 1, 1] },
    { inputIds: [5, 2, 7], responseMask: [0, 1, 0] },
    { inputIds: [5, 2], responseMask: [0, 0] }, // no response: left out
  ]);
  assert.deepEqual(pairs.prompts, [[1, 2], [5]]);
  assert.deepEqual(pairs.reasoning, [[3, 4], [9, 8], [2]]);
  assert.deepEqual(pairs.column, [0, 0, 1]);
  assert.equal(pairs.total, 4);
});
