import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type NormMethod, type NormType, normalizeScores, normTypesOf, resolveNormTypes } from '../../../src/algo/normalize';

/** The types a deprecated method stands for under a group-wise grouping (ROLL's _resolve_reward_norm_defaults). */
const byMethod = (m: NormMethod) => normTypesOf(m, 'traj_group_id');

const close = (actual: number[], expected: number[], tol = 1e-9): void => {
  assert.equal(actual.length, expected.length);
  actual.forEach((a, i) => assert.ok(Math.abs(a - expected[i]) <= tol, `[${i}] ${a} vs ${expected[i]}`));
};

const SCORES = [1, 3, 0, 0, 6];
const KEYS = ['a', 'a', 'b', 'b', 'b'];

test('identity returns the scores', () => {
  close(normalizeScores(SCORES, KEYS, byMethod('identity')), SCORES);
});

test('mean: s - group mean (a: mu 2; b: mu 2)', () => {
  close(normalizeScores(SCORES, KEYS, byMethod('mean')), [-1, 1, -2, -2, 4]);
});

test('mean_std: unbiased std + 1e-6 (a: sigma sqrt 2; b: sigma sqrt 12)', () => {
  const sa = Math.SQRT2 + 1e-6;
  const sb = Math.sqrt(12) + 1e-6; // deviations -2, -2, 4: 24 / (3 - 1) = 12
  const expected = [-1 / sa, 1 / sa, -2 / sb, -2 / sb, 4 / sb];
  close(normalizeScores(SCORES, KEYS, byMethod('mean_std')), expected);
  close(normalizeScores(SCORES, KEYS, byMethod('asym_clip')), expected);
  close(expected, [-0.7071064, 0.7071064, -0.5773501, -0.5773501, 1.1547003], 1e-6);
});

test('singleton group and flat group give 0 with a std; mean-only singleton gives 0 too', () => {
  const s = [5, 0.5, 0.5, 0.5, 2, 4];
  const k = ['solo', 'flat', 'flat', 'flat', 'x', 'x'];
  const sx = Math.SQRT2 + 1e-6;
  close(normalizeScores(s, k, byMethod('mean_std')), [0, 0, 0, 0, -1 / sx, 1 / sx]);
  close(normalizeScores(s, k, byMethod('mean')), [0, 0, 0, 0, -1, 1]);
  // sigma <= 1e-6 counts as flat
  close(normalizeScores([1, 1 + 1e-7], ['g', 'g'], byMethod('mean_std')), [0, 0]);
});

test('grouping batch: one key for all', () => {
  const s = [0, 1, 2, 3];
  const sd = Math.sqrt(5 / 3) + 1e-6; // deviations -1.5,-0.5,0.5,1.5: 5 / 3
  close(normalizeScores(s, ['batch', 'batch', 'batch', 'batch'], byMethod('mean_std')), [-1.5 / sd, -0.5 / sd, 0.5 / sd, 1.5 / sd]);
});

test('errors name the field, value and what is allowed', () => {
  assert.throws(() => normalizeScores([1], ['a', 'b'], byMethod('mean')), /scores has 1 entries but groupKeys has 2/);
  assert.throws(
    () => normalizeScores([1], ['a'], { norm_mean_type: 'zscore' as NormType, norm_std_type: null }),
    /norm_mean_type "zscore" is not known; allowed: batch, group or null/,
  );
  assert.throws(() => normalizeScores([NaN], ['a'], byMethod('mean')), /scores\[0\] must be finite, got NaN/);
});

// The grouping keys below are what update.ts groupKeyOf produces for each reward_normalization.grouping.
const G_SCORES = [1, 0, 0, 0.5, 0.5, 2];

test('grouping traj_group_id: one group per "{tag}_{group_id}_{episode}_{seed}"', () => {
  const keys = ['FrozenLake_0_0_7', 'FrozenLake_0_0_7', 'FrozenLake_1_0_9', 'FrozenLake_1_0_9', 'FrozenLake_1_0_9', 'Bandit_2_0_4'];
  // g0 [1, 0]: mu 0.5, sd sqrt(0.5) = 0.7071068; g1 [0, 0.5, 0.5]: mu 1/3, deviations -1/3, 1/6, 1/6,
  // ss = 1/9 + 1/36 + 1/36 = 1/6, var = 1/12, sd = 0.2886751; g2 [2] singleton -> 0
  const s0 = Math.sqrt(0.5) + 1e-6;
  const s1 = Math.sqrt(1 / 12) + 1e-6;
  close(normalizeScores(G_SCORES, keys, byMethod('mean_std')), [0.5 / s0, -0.5 / s0, -1 / 3 / s1, 1 / 6 / s1, 1 / 6 / s1, 0]);
  close(normalizeScores(G_SCORES, keys, byMethod('mean_std')), [0.7071058, -0.7071058, -1.1546959, 0.5773479, 0.5773479, 0], 1e-6);
  // mean: s - mu_g; the singleton keeps s - s = 0
  close(normalizeScores(G_SCORES, keys, byMethod('mean')), [0.5, -0.5, -1 / 3, 1 / 6, 1 / 6, 0]);
});

test('grouping tags: one group per env tag', () => {
  const keys = ['FrozenLake', 'Bandit', 'FrozenLake', 'Bandit', 'FrozenLake', 'Bandit'];
  // FrozenLake [1, 0, 0.5]: mu 0.5, ss 0.5, var 0.25, sd 0.5; Bandit [0, 0.5, 2]: mu 5/6,
  // deviations -5/6, -1/3, 7/6, ss = 25/36 + 4/36 + 49/36 = 78/36, var = 39/36, sd = 1.0408330
  const sf = 0.5 + 1e-6;
  const sb = Math.sqrt(39 / 36) + 1e-6;
  close(normalizeScores(G_SCORES, keys, byMethod('asym_clip')), [0.5 / sf, -5 / 6 / sb, -0.5 / sf, -1 / 3 / sb, 0, 7 / 6 / sb]);
  close(normalizeScores(G_SCORES, keys, byMethod('asym_clip')), [0.999998, -0.8006397, -0.999998, -0.3202559, 0, 1.1208956], 1e-6);
});

test('grouping by an arbitrary trajectory field (e.g. seed): its stringified value is the key', () => {
  const keys = ['11', '11', '11', '12', '12', '12'];
  // seed 11 [1, 0, 0]: mu 1/3 -> 2/3, -1/3, -1/3; seed 12 [0.5, 0.5, 2]: mu 1 -> -0.5, -0.5, 1
  close(normalizeScores(G_SCORES, keys, byMethod('mean')), [2 / 3, -1 / 3, -1 / 3, -0.5, -0.5, 1]);
  // identity ignores the groups entirely
  close(normalizeScores(G_SCORES, keys, byMethod('identity')), G_SCORES);
});

// ROLL's own agentic_reward_norm and RewardNormalizationConfig (roll/pipeline/agentic/utils.py and
// agentic_config.py, ROLL 8eb27cc2), run with torch float32 on these scores: group a [1, 0, 0.5], b
// [0.25, 0.75, 0.75], c a group of one [2], d a flat group [0.3, 0.3]. Batch mean 0.65, batch std 0.5932116.
const R_SCORES = [1.0, 0.0, 0.5, 0.25, 0.75, 0.75, 2.0, 0.3, 0.3];
const R_GROUPS = ['a', 'a', 'a', 'b', 'b', 'b', 'c', 'd', 'd'];
const ROLL_GROUPED: Array<[NormType | null, NormType | null, number[]]> = [
  [null, null, [1.0, 0.0, 0.5, 0.25, 0.75, 0.75, 2.0, 0.3, 0.3]],
  [null, 'batch', [1.685796, 0.0, 0.842898, 0.421449, 1.2643471, 1.2643471, 0.0, 0.5057389, 0.5057389]],
  [null, 'group', [1.9999959, 0.0, 0.999998, 0.8660224, 2.598067, 2.598067, 0.0, 0.0, 0.0]],
  ['batch', null, [0.35, -0.65, -0.15, -0.4, 0.1, 0.1, 1.3499999, -0.35, -0.35]],
  ['batch', 'batch', [0.5900286, -1.0957675, -0.2528695, -0.6743185, 0.1685795, 0.1685795, 0.0, -0.5900286, -0.5900286]],
  ['batch', 'group', [0.6999985, -1.2999974, -0.2999995, -1.385636, 0.3464088, 0.3464088, 0.0, 0.0, 0.0]],
  ['group', null, [0.5, -0.5, 0.0, -0.3333333, 0.1666667, 0.1666667, 0.0, 0.0, 0.0]],
  ['group', 'batch', [0.842898, -0.842898, 0.0, -0.561932, 0.280966, 0.280966, 0.0, 0.0, 0.0]],
  ['group', 'group', [0.999998, -0.999998, 0.0, -1.1546965, 0.5773484, 0.5773484, 0.0, 0.0, 0.0]],
];

test('grouping traj_group_id: every norm_mean_type x norm_std_type equals ROLL (group of one -> 0 under any std)', () => {
  for (const [m, s, expected] of ROLL_GROUPED) {
    close(normalizeScores(R_SCORES, R_GROUPS, { norm_mean_type: m, norm_std_type: s }), expected, 1e-6);
  }
});

test('grouping batch: batch and group statistics coincide; the four distinct cases equal ROLL', () => {
  const keys = R_SCORES.map(() => 'batch');
  const roll: Array<[NormType | null, NormType | null, number[]]> = [
    [null, 'batch', [1.685796, 0.0, 0.842898, 0.421449, 1.2643471, 1.2643471, 3.371592, 0.5057389, 0.5057389]],
    ['batch', null, [0.35, -0.65, -0.15, -0.4, 0.1, 0.1, 1.3499999, -0.35, -0.35]],
    ['batch', 'batch', [0.5900286, -1.0957675, -0.2528695, -0.6743185, 0.1685795, 0.1685795, 2.2758245, -0.5900286, -0.5900286]],
  ];
  close(normalizeScores(R_SCORES, keys, { norm_mean_type: null, norm_std_type: null }), R_SCORES);
  for (const [m, s, expected] of roll) {
    close(normalizeScores(R_SCORES, keys, { norm_mean_type: m, norm_std_type: s }), expected, 1e-6);
    const swapped = { norm_mean_type: m && 'group', norm_std_type: s && 'group' } as const;
    close(normalizeScores(R_SCORES, keys, swapped), expected, 1e-6);
  }
});

test("method fills only the types left null, as ROLL's RewardNormalizationConfig resolves them", () => {
  // ROLL: grouping batch -> batch statistics, any other grouping -> group statistics; identity -> none.
  const expected: Record<string, Record<NormMethod, [NormType | null, NormType | null]>> = {
    batch: { identity: [null, null], mean: ['batch', null], mean_std: ['batch', 'batch'], asym_clip: ['batch', 'batch'] },
    traj_group_id: { identity: [null, null], mean: ['group', null], mean_std: ['group', 'group'], asym_clip: ['group', 'group'] },
    tags: { identity: [null, null], mean: ['group', null], mean_std: ['group', 'group'], asym_clip: ['group', 'group'] },
  };
  for (const [grouping, byM] of Object.entries(expected)) {
    for (const [method, [m, s]] of Object.entries(byM)) {
      assert.deepEqual(
        resolveNormTypes({ grouping, method: method as NormMethod }),
        { norm_mean_type: m, norm_std_type: s },
        `${grouping} ${method}`,
      );
    }
  }
  // Explicit types win; ROLL: mean_std + norm_mean_type batch -> (batch, group); mean + norm_std_type group -> (group, group).
  const a = resolveNormTypes({ grouping: 'traj_group_id', method: 'mean_std', norm_mean_type: 'batch', norm_std_type: null });
  assert.deepEqual(a, { norm_mean_type: 'batch', norm_std_type: 'group' });
  close(normalizeScores(R_SCORES, R_GROUPS, a), [0.6999985, -1.2999974, -0.2999995, -1.385636, 0.3464088, 0.3464088, 0.0, 0.0, 0.0], 1e-6);
  const b = resolveNormTypes({ grouping: 'traj_group_id', method: 'mean', norm_std_type: 'group' });
  assert.deepEqual(b, { norm_mean_type: 'group', norm_std_type: 'group' });
});

test('groups of one: every score is 0 under a group mean or any std, not under the batch mean alone', () => {
  const keys = ['x', 'y', 'z'];
  close(normalizeScores([1, 0, 0.5], keys, byMethod('mean_std')), [0, 0, 0]);
  close(normalizeScores([1, 0, 0.5], keys, byMethod('mean')), [0, 0, 0]);
  close(normalizeScores([1, 0, 0.5], keys, { norm_mean_type: 'batch', norm_std_type: null }), [0.5, -0.5, 0]);
});
