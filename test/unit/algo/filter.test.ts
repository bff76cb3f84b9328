import assert from 'node:assert/strict';
import { test } from 'node:test';
import { filterGroups } from '../../../src/algo/filter';

const near = (a: number, b: number, what: string, tol = 1e-7): void => assert.ok(Math.abs(a - b) <= tol, `${what}: ${a} vs ${b}`);

// Four groups of three, interleaved: trajectory i belongs to group "abcd"[i % 4].
//   a (0, 4, 8):  [1, 0, 0]  mean 1/3, deviations 2/3, -1/3, -1/3, ss 6/9, var 1/3, U = sqrt(1/3) = 0.5773503, max 1
//   b (1, 5, 9):  [0, 0, 0]  mean 0, U = 0, max 0
//   c (2, 6, 10): [1, 1, 0]  mean 2/3, U = 0.5773503 (ties with a), max 1
//   d (3, 7, 11): [2, 0, 1]  mean 1, deviations 1, -1, 0, var 1, U = 1, max 2
const SCORES = [1, 0, 1, 2, 0, 0, 1, 0, 0, 0, 0, 1];
const KEYS = SCORES.map((_, i) => 'abcd'[i % 4]);
const U = Math.sqrt(1 / 3);
const IDX = { a: [0, 4, 8], b: [1, 5, 9], c: [2, 6, 10], d: [3, 7, 11] };
const sorted = (...gs: number[][]) => gs.flat().sort((x, y) => x - y);

test('std: keep the top k = max(1, floor(ratio * G)) groups by U; ties go to the earlier group', () => {
  // ratio 0.5: k = floor(2) = 2; order d (1), a (0.577), c (0.577, after a), b (0) -> d, a
  const out = filterGroups({ scores: SCORES, groupKeys: KEYS, type: 'std', ratio: 0.5 });
  assert.deepEqual(out.keep, sorted(IDX.a, IDX.d));
  assert.equal(out.skipReason, null);
  const expected: Record<string, number> = {
    'rollout/in_group_std': (U + 0 + U + 1) / 4, // 0.5386751
    'rollout/in_group_mean': (1 / 3 + 0 + 2 / 3 + 1) / 4, // 0.5
    'rollout/in_group_max': (1 + 0 + 1 + 2) / 4, // 1
    'rollout/chosen_in_group_std': (1 + U) / 2, // 0.7886751
    'rollout/chosen_in_group_mean': (1 + 1 / 3) / 2, // 0.6666667
    'rollout/chosen_in_group_max': (2 + 1) / 2,
    'rollout/kept_groups': 2,
    'rollout/kept_trajectories': 6,
    'rollout/filter_ratio_effective': 0.5,
    'rollout/filter_kept_count': 2,
    'rollout/filter_kept_ratio': 0.5,
    'rollout/filter_zero_count': 1,
  };
  assert.deepEqual(Object.keys(out.metrics).sort(), Object.keys(expected).sort());
  for (const k of Object.keys(expected)) near(out.metrics[k], expected[k], k);
  near(out.metrics['rollout/in_group_std'], 0.5386751, 'in_group_std value', 1e-7);
  // ratio 0.25: k = 1 -> d; ratio 0.3: floor(1.2) = 1 -> d; ratio 0.1: floor(0.4) = 0 -> at least 1 -> d
  for (const ratio of [0.25, 0.3, 0.1]) assert.deepEqual(filterGroups({ scores: SCORES, groupKeys: KEYS, type: 'std', ratio }).keep, IDX.d);
  // ratio 0.75: k = 3 -> d, a, c
  assert.deepEqual(filterGroups({ scores: SCORES, groupKeys: KEYS, type: 'std', ratio: 0.75 }).keep, sorted(IDX.a, IDX.c, IDX.d));
  // ratio 1: everything, ascending
  const all = filterGroups({ scores: SCORES, groupKeys: KEYS, type: 'std', ratio: 1 });
  assert.deepEqual(all.keep, [...Array(12).keys()]);
  near(all.metrics['rollout/chosen_in_group_std'], all.metrics['rollout/in_group_std'], 'ratio 1 chosen = all');
});

test('std_rev keeps the lowest-U groups (ties: earlier group first)', () => {
  // ascending: b (0), a (0.577), c (0.577), d (1); ratio 0.5 -> b, a
  const out = filterGroups({ scores: SCORES, groupKeys: KEYS, type: 'std_rev', ratio: 0.5 });
  assert.deepEqual(out.keep, sorted(IDX.a, IDX.b));
  near(out.metrics['rollout/chosen_in_group_std'], U / 2, 'chosen std'); // (0 + 0.577) / 2
  near(out.metrics['rollout/chosen_in_group_mean'], 1 / 6, 'chosen mean'); // (0 + 1/3) / 2
});

test('singleton groups have U = 0; unequal group sizes count whole groups', () => {
  // s: [5] singleton (U 0); x: [0, 2] (U sqrt(2) = 1.4142136); y: [1, 1, 1.5] (mean 7/6, deviations -1/6, -1/6, 1/3,
  // ss 1/36 + 1/36 + 4/36 = 1/6, var 1/12, U = 0.2886751)
  const scores = [5, 0, 2, 1, 1, 1.5];
  const keys = ['s', 'x', 'x', 'y', 'y', 'y'];
  const out = filterGroups({ scores, groupKeys: keys, type: 'std', ratio: 0.34 }); // k = floor(1.02) = 1
  assert.deepEqual(out.keep, [1, 2]);
  near(out.metrics['rollout/in_group_std'], (0 + Math.SQRT2 + Math.sqrt(1 / 12)) / 3, 'in_group_std');
  near(out.metrics['rollout/in_group_mean'], (5 + 1 + 7 / 6) / 3, 'in_group_mean');
  near(out.metrics['rollout/filter_ratio_effective'], 1 / 3, 'effective ratio');
  assert.equal(out.metrics['rollout/kept_trajectories'], 2);
  // std_rev with k = 1 keeps the singleton
  assert.deepEqual(filterGroups({ scores, groupKeys: keys, type: 'std_rev', ratio: 0.34 }).keep, [0]);
});

test('top_p: drop zero-variance groups, keep by descending U until the running sum reaches p * sum(U) - eps', () => {
  // live: d (1), a (0.5773503), c (0.5773503); b dropped. sum = 2.1547005
  // p 0.9: threshold = 1.9392305 - 0.01 = 1.9292305; running 0 -> +d = 1 -> +a = 1.5773503 -> +c = 2.1547005 (>=) -> d, a, c
  assert.deepEqual(filterGroups({ scores: SCORES, groupKeys: KEYS, type: 'top_p', ratio: 0.9 }).keep, sorted(IDX.a, IDX.c, IDX.d));
  // p 0.7: threshold = 1.5082904 - 0.01 = 1.4982904; +d = 1 (<) -> +a = 1.5773503 (>=) stop -> d, a (a crosses and is kept)
  const p7 = filterGroups({ scores: SCORES, groupKeys: KEYS, type: 'top_p', ratio: 0.7 });
  assert.deepEqual(p7.keep, sorted(IDX.a, IDX.d));
  assert.equal(p7.metrics['rollout/kept_groups'], 2);
  near(p7.metrics['rollout/chosen_in_group_std'], (1 + U) / 2, 'chosen std');
  // p 0.4: threshold = 0.8618802 - 0.01 = 0.8518802; +d = 1 (>=) -> d only
  assert.deepEqual(filterGroups({ scores: SCORES, groupKeys: KEYS, type: 'top_p', ratio: 0.4 }).keep, IDX.d);
  // p 0.46, eps 0: threshold = 0.9911622; +d = 1 -> d only; with eps 0.01 the threshold 0.9811622 gives the same
  assert.deepEqual(filterGroups({ scores: SCORES, groupKeys: KEYS, type: 'top_p', ratio: 0.46, selectionEps: 0 }).keep, IDX.d);
  // p 0.47, eps 0: threshold = 1.0127092 > 1 -> d, a; with eps 0.01: 1.0027092 > 1 -> d, a; eps 0.02: 0.9927 -> d
  assert.deepEqual(
    filterGroups({ scores: SCORES, groupKeys: KEYS, type: 'top_p', ratio: 0.47, selectionEps: 0 }).keep,
    sorted(IDX.a, IDX.d),
  );
  assert.deepEqual(filterGroups({ scores: SCORES, groupKeys: KEYS, type: 'top_p', ratio: 0.47, selectionEps: 0.02 }).keep, IDX.d);
  // p 1: every group with nonzero variance (b is still dropped)
  const p1 = filterGroups({ scores: SCORES, groupKeys: KEYS, type: 'top_p', ratio: 1 });
  assert.deepEqual(p1.keep, sorted(IDX.a, IDX.c, IDX.d));
  near(p1.metrics['rollout/filter_ratio_effective'], 0.75, 'effective ratio');
});

test('top_p: std <= 1e-6 counts as zero variance; nothing left -> keep [] and a skip reason', () => {
  // g: [1, 1 + 1e-7] has U = 7.07e-8 <= 1e-6; h: singleton; k: [0, 0]
  const out = filterGroups({ scores: [1, 1 + 1e-7, 3, 0, 0], groupKeys: ['g', 'g', 'h', 'k', 'k'], type: 'top_p', ratio: 0.9 });
  assert.deepEqual(out.keep, []);
  assert.match(out.skipReason ?? '', /all 3 groups have zero reward variance/);
  assert.equal(out.metrics['rollout/kept_groups'], 0);
  assert.equal(out.metrics['rollout/kept_trajectories'], 0);
  assert.equal(out.metrics['rollout/chosen_in_group_std'], 0);
  assert.equal(out.metrics['rollout/chosen_in_group_mean'], 0);
  near(out.metrics['rollout/in_group_mean'], (1 + 0.5e-7 + 3 + 0) / 3, 'in_group_mean');
});

test('top_p: a batch whose p * total std is within selection eps is skipped (RAGEN empty_after_filter)', () => {
  // one group [0, 0.01]: U = 0.01 / sqrt(2) = 0.0070711; p 0.9 -> 0.0063640 - 0.01 < 0 -> nothing
  const args = { scores: [0, 0.01], groupKeys: ['g', 'g'], type: 'top_p' as const, ratio: 0.9 };
  const out = filterGroups(args);
  assert.deepEqual(out.keep, []);
  assert.match(
    out.skipReason ?? '',
    /top_p 0\.9: ratio \* total in-group std of the 1 of 1 groups with nonzero variance is 0\.00636.*not above selection eps 0\.01/,
  );
  assert.deepEqual(filterGroups({ ...args, selectionEps: 0 }).keep, [0, 1]);
});

test('errors name the input and what is allowed', () => {
  const base = { scores: [1, 0], groupKeys: ['a', 'a'], type: 'std' as const, ratio: 0.5 };
  assert.throws(() => filterGroups({ ...base, groupKeys: ['a'] }), /scores has 2 entries but groupKeys has 1/);
  assert.throws(() => filterGroups({ ...base, scores: [], groupKeys: [] }), /the batch has no trajectories/);
  assert.throws(() => filterGroups({ ...base, scores: [1, NaN] }), /scores\[1\] must be finite, got NaN/);
  assert.throws(
    () => filterGroups({ ...base, type: 'max_mean' as never }),
    /rollout_filter_type "max_mean" is not known; allowed: std, std_rev, top_p/,
  );
  assert.throws(() => filterGroups({ ...base, ratio: 0 }), /rollout_filter_ratio = 0; allowed: \(0, 1\]/);
  assert.throws(() => filterGroups({ ...base, ratio: 1.5 }), /rollout_filter_ratio = 1.5/);
  assert.throws(() => filterGroups({ ...base, selectionEps: -1 }), /selectionEps = -1/);
});
