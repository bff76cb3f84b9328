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

// The grouping keys below are what ppo_update's groupKeyOf produces for each reward_normalization.grouping.
const G_SCORES = [1, 0, 0, 0.5, 0.5, 2];

test('grouping traj_group_id: one group per "{tag}_{group_id}_{episode}_{seed}"', () => {
  const keys = ['FrozenLake_0_0_7', 'FrozenLake_0_0_7', 'FrozenLake_1_0_9', 'FrozenLake_1_0_9', 'FrozenLake_1_0_9', 'Bandit_2_0_4'];
  // g0 [1, 0]: mu 0.5, sd sqrt(0.5) = 0.7071068; g1 [0, 0.5, 0.5]: mu 1/3, deviations -1/3, 1/6, 1/6,
  // ss = 1/9 + 1/36 + 1/36 = 1/6, var = 1/12, sd = 0.2886751; g2 [2] singleton -> 0
  const s0 = Math.sqrt(0.5) + 1e-6;
  const s1 = Math.sqrt(1 / 12) + 1e-6;
  close(normalizeScores(G_SCORES, keys, 'mean_std'), [0.5 / s0, -0.5 / s0, (-1 / 3) / s1, (1 / 6) / s1, (1 / 6) / s1, 0]);
  close(normalizeScores(G_SCORES, keys, 'mean_std'), [0.7071058, -0.7071058, -1.1546959, 0.5773479, 0.5773479, 0], 1e-6);
  // mean: s - mu_g; the singleton keeps s - s = 0
  close(normalizeScores(G_SCORES, keys, 'mean'), [0.5, -0.5, -1 / 3, 1 / 6, 1 / 6, 0]);
});

test('grouping tags: one group per env tag', () => {
  const keys = ['FrozenLake', 'Bandit', 'FrozenLake', 'Bandit', 'FrozenLake', 'Bandit'];
  // FrozenLake [1, 0, 0.5]: mu 0.5, ss 0.5, var 0.25, sd 0.5; Bandit [0, 0.5, 2]: mu 5/6,
  // deviations -5/6, -1/3, 7/6, ss = 25/36 + 4/36 + 49/36 = 78/36, var = 39/36, sd = 1.0408330
  const sf = 0.5 + 1e-6;
  const sb = Math.sqrt(39 / 36) + 1e-6;
  close(normalizeScores(G_SCORES, keys, 'asym_clip'), [0.5 / sf, (-5 / 6) / sb, -0.5 / sf, (-1 / 3) / sb, 0, (7 / 6) / sb]);
  close(normalizeScores(G_SCORES, keys, 'asym_clip'), [0.999998, -0.8006397, -0.999998, -0.3202559, 0, 1.1208956], 1e-6);
});

test('grouping by an arbitrary trajectory field (e.g. seed): its stringified value is the key', () => {
  const keys = ['11', '11', '11', '12', '12', '12'];
  // seed 11 [1, 0, 0]: mu 1/3 -> 2/3, -1/3, -1/3; seed 12 [0.5, 0.5, 2]: mu 1 -> -0.5, -0.5, 1
  close(normalizeScores(G_SCORES, keys, 'mean', null), [2 / 3, -1 / 3, -1 / 3, -0.5, -0.5, 1]);
  // identity ignores the groups entirely
  close(normalizeScores(G_SCORES, keys, 'identity'), G_SCORES);
});

test('reward_clip applies after mean_std (and symmetric)', () => {
  // one batch group [0, 0, 3]: mu 1, deviations -1, -1, 2, ss 6, var 3, sd 1.7320508
  // r = -0.5773501, -0.5773501, 1.1547003 -> clip 1 -> -0.5773501, -0.5773501, 1
  const sd = Math.sqrt(3) + 1e-6;
  close(normalizeScores([0, 0, 3], ['batch', 'batch', 'batch'], 'mean_std', 1), [-1 / sd, -1 / sd, 1]);
});
