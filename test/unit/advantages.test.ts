import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  agenticReinforceReturns, clipAdvantages, computeAdvantages, reinforceReturns, tokenRewards, whiten,
} from '../../src/algo/advantages';

const closeM = (actual: number[][], expected: number[][], tol = 1e-7): void => {
  assert.equal(actual.length, expected.length);
  actual.forEach((row, i) => {
    assert.equal(row.length, expected[i].length);
    row.forEach((a, t) => assert.ok(Math.abs(a - expected[i][t]) <= tol, `[${i}][${t}] ${a} vs ${expected[i][t]}`));
  });
};

test('tokenRewards: the normalised score sits on the last sampled slot', () => {
  assert.deepEqual(tokenRewards([0.5, -1], [2, -1], 4), [[0, 0, 0.5, 0], [0, 0, 0, 0]]);
  assert.throws(() => tokenRewards([1], [4], 4), /lastIndex\[0\] = 4; allowed -1\.\.3/);
});

test('reinforceReturns: gamma 1 spreads r backwards across masked gaps; gamma 0.5 discounts', () => {
  const mask = [[1, 0, 1, 0]];
  closeM(reinforceReturns([[0, 0, 0.5, 0]], mask, 1), [[0.5, 0.5, 0.5, 0]]);
  closeM(reinforceReturns([[0, 0, 1, 0]], mask, 0.5), [[0.25, 0.5, 1, 0]]);
  closeM(reinforceReturns([[1, 0, 1, 0]], mask, 0.5), [[1.25, 0.5, 1, 0]]);
  assert.throws(() => reinforceReturns([[0]], [[1]], 1.5), /gamma must be in \[0, 1\], got 1.5/);
  assert.throws(() => reinforceReturns([[0, 0]], [[1]], 1), /mask\[0\] has length 1; expected 2/);
});

test('agenticReinforceReturns: one value per turn segment', () => {
  const mask = [[1, 1, 0, 1, 1, 0]];
  const R = [[0, 0, 0, 0, 1, 0]];
  closeM(agenticReinforceReturns(R, mask, 0.5), [[0.5, 0.5, 0, 1, 1, 0]]);
  closeM(agenticReinforceReturns(R, mask, 1), [[1, 1, 0, 1, 1, 0]]);
  closeM(agenticReinforceReturns([[0, 2, 0, 0, 1, 0]], mask, 0.5), [[2.5, 2.5, 0, 1, 1, 0]]);
});

test('whiten: masked, unbiased, eps 1e-8, mean not added back, then A*m', () => {
  // masked values 1, 1, 3: n = 3, mu = 5/3, deviations -2/3, -2/3, 4/3, sum sq = 24/9
  const A = [[1, 1, 7], [3, 9, 0]];
  const m = [[1, 1, 0], [1, 0, 0]];
  const n = 3;
  const mu = 5 / (n + 1e-8);
  const variance = (((1 - mu) ** 2 * 2 + (3 - mu) ** 2) / (n + 1e-8)) * (n / (n - 1));
  const sd = Math.sqrt(variance + 1e-8);
  const expected = [[(1 - mu) / sd, (1 - mu) / sd, 0], [(3 - mu) / sd, 0, 0]];
  closeM(whiten(A, m), expected, 1e-12);
  closeM(expected, [[-0.5773503, -0.5773503, 0], [1.1547005, 0, 0]], 1e-6); // sd = sqrt(4/3)
});

test('whiten is skipped when sum(mask) <= 1 (still masked)', () => {
  closeM(whiten([[2, 5]], [[0, 1]]), [[0, 5]]);
  closeM(whiten([[2, 5]], [[0, 0]]), [[0, 0]]);
});

test('clipAdvantages', () => {
  closeM(clipAdvantages([[-0.5, 0.1, 0.3]], 0.2), [[-0.2, 0.1, 0.2]]);
  assert.throws(() => clipAdvantages([[0]], 0), /advantage_clip must be a positive number, got 0/);
});

// Two groups of two; multi-turn mask with padding; trajectory 3 has no sampled token.
const SCORES = [1, 0, 0.5, 0.5];
const KEYS = ['g0', 'g0', 'g1', 'g1'];
const MASK = [[1, 1, 0, 1, 0], [0, 1, 1, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0]];
const LAST = [3, 2, 0, -1];
const r = 0.5 / (Math.SQRT1_2 + 1e-6); // g0: mu 0.5, unbiased sd sqrt(0.5); g1 flat -> 0

test('computeAdvantages: mean_std, gamma 1, no whitening: every sampled token gets r_i', () => {
  const out = computeAdvantages({ scores: SCORES, groupKeys: KEYS, mask: MASK, lastIndex: LAST, method: 'mean_std', gamma: 1, whiten: false });
  closeM([out.normalizedScores], [[r, -r, 0, 0]]);
  closeM(out.advantages, [[r, r, 0, r, 0], [0, -r, -r, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]]);
  const m = out.metrics;
  const expected: Record<string, number> = {
    'critic/score/mean': 0.5, 'critic/score/max': 1, 'critic/score/min': 0,
    'critic/rewards/mean': 0, 'critic/rewards/max': r, 'critic/rewards/min': -r,
    'critic/advantages/mean': r / 6, 'critic/advantages/max': r, 'critic/advantages/min': -r,
    'critic/advantage_clip_frac': 0,
  };
  assert.deepEqual(Object.keys(m).sort(), Object.keys(expected).sort());
  for (const k of Object.keys(expected)) assert.ok(Math.abs(m[k] - expected[k]) < 1e-9, `${k}: ${m[k]} vs ${expected[k]}`);
});

test('computeAdvantages: whitening then advantage_clip 0.2, clip fraction over masked tokens', () => {
  const out = computeAdvantages({
    scores: SCORES, groupKeys: KEYS, mask: MASK, lastIndex: LAST, method: 'mean_std', gamma: 1,
    whiten: true, advantageClip: 0.2, advEstimator: 'grpo',
  });
  // masked values: r, r, r, -r, -r, 0 (n = 6)
  const n = 6;
  const mu = r / (n + 1e-8);
  const ss = 3 * (r - mu) ** 2 + 2 * (-r - mu) ** 2 + mu ** 2;
  const sd = Math.sqrt((ss / (n + 1e-8)) * (n / (n - 1)) + 1e-8);
  const w0 = -mu / sd; // -0.16951: inside the clip
  assert.ok(Math.abs(w0) < 0.2 && (r - mu) / sd > 0.2 && (-r - mu) / sd < -0.2);
  closeM(out.advantages, [[0.2, 0.2, 0, 0.2, 0], [0, -0.2, -0.2, 0, 0], [w0, 0, 0, 0, 0], [0, 0, 0, 0, 0]]);
  assert.ok(Math.abs(out.metrics['critic/advantage_clip_frac'] - 5 / 6) < 1e-12);
  assert.ok(Math.abs(out.metrics['critic/advantages/min'] + 0.2) < 1e-12);
});

test('computeAdvantages: identity + mean grouping batch, reward_clip, errors', () => {
  const out = computeAdvantages({
    scores: [2, -2], groupKeys: ['batch', 'batch'], mask: [[1, 1], [0, 1]], lastIndex: [1, 1],
    method: 'identity', gamma: 1, whiten: false, rewardClip: 1,
  });
  closeM(out.advantages, [[1, 1], [0, -1]]);
  assert.throws(() => computeAdvantages({
    scores: [1], groupKeys: ['a'], mask: [[1]], lastIndex: [0], method: 'mean', gamma: 1, whiten: false, advEstimator: 'gae',
  }), /adv_estimator "gae" is not supported here; allowed: reinforce, grpo, agentic_reinforce/);
  assert.throws(() => computeAdvantages({
    scores: [1, 2], groupKeys: ['a', 'a'], mask: [[1]], lastIndex: [0, 0], method: 'mean', gamma: 1, whiten: false,
  }), /mask has 1 rows; expected 2/);
});
