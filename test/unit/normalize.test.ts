import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeScores } from '../../src/algo/normalize';

const close = (actual: number[], expected: number[], tol = 1e-9): void => {
  assert.equal(actual.length, expected.length);
  actual.forEach((a, i) => assert.ok(Math.abs(a - expected[i]) <= tol, `[${i}] ${a} vs ${expected[i]}`));
};

const SCORES = [1, 3, 0, 0, 6];
const KEYS = ['a', 'a', 'b', 'b', 'b'];

test('identity returns the scores', () => {
  close(normalizeScores(SCORES, KEYS, 'identity'), SCORES);
});

test('mean: s - group mean (a: mu 2; b: mu 2)', () => {
  close(normalizeScores(SCORES, KEYS, 'mean'), [-1, 1, -2, -2, 4]);
});

test('mean_std: unbiased std + 1e-6 (a: sigma sqrt 2; b: sigma sqrt 12)', () => {
  const sa = Math.SQRT2 + 1e-6;
  const sb = Math.sqrt(12) + 1e-6; // deviations -2, -2, 4: 24 / (3 - 1) = 12
  const expected = [-1 / sa, 1 / sa, -2 / sb, -2 / sb, 4 / sb];
  close(normalizeScores(SCORES, KEYS, 'mean_std'), expected);
  close(normalizeScores(SCORES, KEYS, 'asym_clip'), expected);
  close(expected, [-0.7071064, 0.7071064, -0.5773501, -0.5773501, 1.1547003], 1e-6);
});

test('singleton group and flat group give 0 with a std; mean-only singleton gives 0 too', () => {
  const s = [5, 0.5, 0.5, 0.5, 2, 4];
  const k = ['solo', 'flat', 'flat', 'flat', 'x', 'x'];
  const sx = Math.SQRT2 + 1e-6;
  close(normalizeScores(s, k, 'mean_std'), [0, 0, 0, 0, -1 / sx, 1 / sx]);
  close(normalizeScores(s, k, 'mean'), [0, 0, 0, 0, -1, 1]);
  // sigma <= 1e-6 counts as flat
  close(normalizeScores([1, 1 + 1e-7], ['g', 'g'], 'mean_std'), [0, 0]);
});

test('grouping batch: one key for all', () => {
  const s = [0, 1, 2, 3];
  const sd = Math.sqrt(5 / 3) + 1e-6; // deviations -1.5,-0.5,0.5,1.5: 5 / 3
  close(normalizeScores(s, ['batch', 'batch', 'batch', 'batch'], 'mean_std'), [-1.5 / sd, -0.5 / sd, 0.5 / sd, 1.5 / sd]);
});

test('reward_clip clamps after normalisation', () => {
  close(normalizeScores(SCORES, KEYS, 'mean', 1.5), [-1, 1, -1.5, -1.5, 1.5]);
  close(normalizeScores([-3, 0.2], ['a', 'b'], 'identity', 1), [-1, 0.2]);
  close(normalizeScores([-3, 0.2], ['a', 'b'], 'identity', null), [-3, 0.2]);
});

test('errors name the field, value and what is allowed', () => {
  assert.throws(() => normalizeScores([1], ['a', 'b'], 'mean'), /scores has 1 entries but groupKeys has 2/);
  assert.throws(() => normalizeScores([1], ['a'], 'zscore' as never), /method "zscore" is not known; allowed: identity, mean, mean_std, asym_clip/);
  assert.throws(() => normalizeScores([NaN], ['a'], 'mean'), /scores\[0\] must be finite, got NaN/);
  assert.throws(() => normalizeScores([1], ['a'], 'mean', -1), /reward_clip must be a positive finite number or null, got -1/);
});
