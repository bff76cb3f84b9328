import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  agenticReinforceReturns,
  clipMatrix,
  computeAdvantages,
  reinforceReturns,
  tokenRewards,
  whiten,
} from '../../../src/algo/advantages';
import { normalizeScores, normTypesOf } from '../../../src/algo/normalize';

const closeM = (actual: number[][], expected: number[][], tol = 1e-7): void => {
  assert.equal(actual.length, expected.length);
  actual.forEach((row, i) => {
    assert.equal(row.length, expected[i].length);
    row.forEach((a, t) => assert.ok(Math.abs(a - expected[i][t]) <= tol, `[${i}][${t}] ${a} vs ${expected[i][t]}`));
  });
};

test('tokenRewards: the normalised score sits on the last sampled slot', () => {
  assert.deepEqual(tokenRewards([0.5, -1], [2, -1], 4), [
    [0, 0, 0.5, 0],
    [0, 0, 0, 0],
  ]);
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
  const A = [
    [1, 1, 7],
    [3, 9, 0],
  ];
  const m = [
    [1, 1, 0],
    [1, 0, 0],
  ];
  const n = 3;
  const mu = 5 / (n + 1e-8);
  const variance = (((1 - mu) ** 2 * 2 + (3 - mu) ** 2) / (n + 1e-8)) * (n / (n - 1));
  const sd = Math.sqrt(variance + 1e-8);
  const expected = [
    [(1 - mu) / sd, (1 - mu) / sd, 0],
    [(3 - mu) / sd, 0, 0],
  ];
  closeM(whiten(A, m), expected, 1e-12);
  closeM(
    expected,
    [
      [-0.5773503, -0.5773503, 0],
      [1.1547005, 0, 0],
    ],
    1e-6,
  ); // sd = sqrt(4/3)
});

test('whiten is skipped when sum(mask) <= 1 (still masked)', () => {
  closeM(whiten([[2, 5]], [[0, 1]]), [[0, 5]]);
  closeM(whiten([[2, 5]], [[0, 0]]), [[0, 0]]);
});

test('clipMatrix clamps to [-c, c] and counts the entries outside (ROLL compute_clip_fraction + clamp)', () => {
  const { clipped, count } = clipMatrix(
    [
      [-0.5, 0.1, 0.3],
      [0.2, -0.2, 0],
    ],
    0.2,
    'advantage_clip',
  );
  closeM(clipped, [
    [-0.2, 0.1, 0.2],
    [0.2, -0.2, 0],
  ]);
  assert.equal(count, 2, '|x| = c is not clipped');
  assert.throws(() => clipMatrix([[0]], 0, 'advantage_clip'), /advantage_clip must be a positive finite number or null, got 0/);
});

// Two groups of two; multi-turn mask with padding; trajectory 3 has no sampled token.
const SCORES = [1, 0, 0.5, 0.5];
const KEYS = ['g0', 'g0', 'g1', 'g1'];
const MASK = [
  [1, 1, 0, 1, 0],
  [0, 1, 1, 0, 0],
  [1, 0, 0, 0, 0],
  [0, 0, 0, 0, 0],
];
const LAST = [3, 2, 0, -1];
const r = 0.5 / (Math.SQRT1_2 + 1e-6); // g0: mu 0.5, unbiased sd sqrt(0.5); g1 flat -> 0

test('computeAdvantages: mean_std, gamma 1, no whitening: every sampled token gets r_i', () => {
  const out = computeAdvantages({
    scores: SCORES,
    mask: MASK,
    lastIndex: LAST,
    normScores: normalizeScores(SCORES, KEYS, normTypesOf('mean_std', 'traj_group_id')),
    gamma: 1,
    whiten: false,
  });
  closeM([out.normalizedScores], [[r, -r, 0, 0]]);
  closeM(out.advantages, [
    [r, r, 0, r, 0],
    [0, -r, -r, 0, 0],
    [0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0],
  ]);
  // returns are not masked: the prompt slot between the turns (row 0, t 2) and t 0 of row 1 carry G too
  closeM(out.returns, [
    [r, r, r, r, 0],
    [-r, -r, -r, 0, 0],
    [0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0],
  ]);
  const m = out.metrics;
  const expected: Record<string, number> = {
    'critic/score/mean': 0.5,
    'critic/score/max': 1,
    'critic/score/min': 0,
    'critic/rewards/mean': 0,
    'critic/rewards/max': r,
    'critic/rewards/min': -r,
    'critic/advantages/mean': r / 6,
    'critic/advantages/max': r,
    'critic/advantages/min': -r,
    // unwhitened returns over the same masked tokens (r, r, r, -r, -r, 0)
    'critic/returns/mean': r / 6,
    'critic/returns/max': r,
    'critic/returns/min': -r,
    'critic/reward_clip_frac': 0,
    'critic/token_reward_clip_frac': 0,
    'critic/advantage_clip_frac': 0,
    'critic/kl_coef': 0,
  };
  assert.deepEqual(Object.keys(m).sort(), Object.keys(expected).sort());
  for (const k of Object.keys(expected)) assert.ok(Math.abs(m[k] - expected[k]) < 1e-9, `${k}: ${m[k]} vs ${expected[k]}`);
});

test('computeAdvantages: whitening then advantage_clip 0.2, clip fraction over all B x T slots (ROLL)', () => {
  const out = computeAdvantages({
    scores: SCORES,
    mask: MASK,
    lastIndex: LAST,
    normScores: normalizeScores(SCORES, KEYS, normTypesOf('mean_std', 'traj_group_id')),
    gamma: 1,
    whiten: true,
    advantageClip: 0.2,
    advEstimator: 'grpo',
  });
  // masked values: r, r, r, -r, -r, 0 (n = 6)
  const n = 6;
  const mu = r / (n + 1e-8);
  const ss = 3 * (r - mu) ** 2 + 2 * (-r - mu) ** 2 + mu ** 2;
  const sd = Math.sqrt((ss / (n + 1e-8)) * (n / (n - 1)) + 1e-8);
  const w0 = -mu / sd; // -0.16951: inside the clip
  assert.ok(Math.abs(w0) < 0.2 && (r - mu) / sd > 0.2 && (-r - mu) / sd < -0.2);
  closeM(out.advantages, [
    [0.2, 0.2, 0, 0.2, 0],
    [0, -0.2, -0.2, 0, 0],
    [w0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0],
  ]);
  // 5 clipped entries over B x T = 20 slots, as ROLL's compute_clip_fraction counts its padded [B, T] tensor (ROLL
  // agentic_compute_advantage: 0.25, and the same advantages, w0 = -0.169516)
  assert.ok(Math.abs(out.metrics['critic/advantage_clip_frac'] - 5 / 20) < 1e-12);
  // with ROLL's padding to sequence_length 9 (8 slots per trajectory): 5 / 32
  const padded = computeAdvantages({
    scores: SCORES,
    mask: MASK,
    lastIndex: LAST,
    normScores: normalizeScores(SCORES, KEYS, normTypesOf('mean_std', 'traj_group_id')),
    gamma: 1,
    whiten: true,
    advantageClip: 0.2,
    advEstimator: 'grpo',
    slotsPerTrajectory: 8,
  });
  assert.ok(Math.abs(padded.metrics['critic/advantage_clip_frac'] - 5 / 32) < 1e-12);
  assert.ok(Math.abs(out.metrics['critic/advantages/min'] + 0.2) < 1e-12);
});

test('computeAdvantages: identity + mean grouping batch, reward_clip, errors', () => {
  const out = computeAdvantages({
    scores: [2, -2],
    mask: [
      [1, 1],
      [0, 1],
    ],
    lastIndex: [1, 1],
    normScores: normalizeScores([2, -2], ['batch', 'batch'], normTypesOf('identity', 'traj_group_id')),
    gamma: 1,
    whiten: false,
    rewardClip: 1,
  });
  closeM(out.advantages, [
    [1, 1],
    [0, -1],
  ]);
  assert.equal(out.metrics['critic/reward_clip_frac'], 1, 'both normalised scores were outside [-1, 1]');
  assert.throws(
    () =>
      computeAdvantages({
        scores: [1],
        mask: [[1]],
        lastIndex: [0],
        normScores: normalizeScores([1], ['a'], normTypesOf('mean', 'traj_group_id')),
        gamma: 1,
        whiten: false,
        advEstimator: 'gae2',
      }),
    /adv_estimator "gae2" is not supported here; allowed: reinforce, grpo, agentic_reinforce, gae/,
  );
  assert.throws(
    () =>
      computeAdvantages({
        scores: [1, 2],
        mask: [[1]],
        lastIndex: [0, 0],
        normScores: normalizeScores([1, 2], ['a', 'a'], normTypesOf('mean', 'traj_group_id')),
        gamma: 1,
        whiten: false,
      }),
    /mask has 1 rows; expected 2/,
  );
});

// Token-level KL (add_token_level_kl). B = 3, T = 4; groups g = {0, 1} and a singleton s = {2}; method mean:
// g: mu 0.5 -> r = 0.5, -0.5; s: 2 - 2 = 0.
const K_SCORES = [1, 0, 2];
const K_KEYS = ['g', 'g', 's'];
const K_MASK = [
  [1, 1, 1, 0],
  [1, 0, 1, 1],
  [0, 1, 0, 0],
];
const K_LAST = [2, 3, 1];
// 9 marks slots off the mask: they must not leak into the rewards or the KL metric
const K_KL = [
  [0.1, -0.2, 0.3, 9],
  [0.2, 9, 0, 0.4],
  [9, 0.5, 9, 9],
];
// R = (r at last - 0.1 * kl) * m:
//   row 0: [-0.01, 0.02, 0.5 - 0.03 = 0.47, 0]; row 1: [-0.02, 0, 0, -0.5 - 0.04 = -0.54]; row 2: [0, 0 - 0.05, 0, 0]
// reinforce, gamma 1 (suffix sums): row 0 [0.48, 0.49, 0.47, 0]; row 1 [-0.56, -0.54, -0.54, -0.54]; row 2 [-0.05, -0.05, 0, 0]
// (ROLL compute_token_reward -> agentic_compute_advantage on the same inputs: the same returns, critic/kl 0.2555555, and for
// agentic_reinforce [[0.47, 0.47, 0.47, 0], [-0.56, 0, -0.54, -0.54], [0, -0.05, 0, 0]])
const K_RETURNS = [
  [0.48, 0.49, 0.47, 0],
  [-0.56, -0.54, -0.54, -0.54],
  [-0.05, -0.05, 0, 0],
];
// critic/kl: per-trajectory masked means (0.1 - 0.2 + 0.3)/3 = 0.0666667, (0.2 + 0 + 0.4)/3 = 0.2, 0.5/1; mean 0.2555556
const K_BATCH_KL = (0.2 / 3 + 0.2 + 0.5) / 3;

test("computeAdvantages: token-level KL subtracts beta * kl on masked slots; critic/kl is ROLL's batch KL", () => {
  const out = computeAdvantages({
    scores: K_SCORES,
    mask: K_MASK,
    lastIndex: K_LAST,
    normScores: normalizeScores(K_SCORES, K_KEYS, normTypesOf('mean', 'traj_group_id')),
    gamma: 1,
    whiten: false,
    tokenKl: K_KL,
    klCoef: 0.1,
  });
  closeM([out.normalizedScores], [[0.5, -0.5, 0]]);
  closeM(out.returns, K_RETURNS, 1e-12);
  closeM(
    out.advantages,
    [
      [0.48, 0.49, 0.47, 0],
      [-0.56, 0, -0.54, -0.54],
      [0, -0.05, 0, 0],
    ],
    1e-12,
  );
  const m = out.metrics;
  assert.ok(Math.abs(m['critic/kl'] - K_BATCH_KL) < 1e-8 && Math.abs(K_BATCH_KL - 0.2555556) < 1e-7, `kl ${m['critic/kl']}`);
  assert.equal(m['critic/kl_coef'], 0.1);
  // masked returns 0.48, 0.49, 0.47, -0.56, -0.54, -0.54, -0.05: sum -0.25, mean -0.0357143
  assert.ok(Math.abs(m['critic/returns/mean'] - -0.25 / 7) < 1e-12);
  assert.equal(m['critic/returns/max'], 0.49);
  assert.equal(m['critic/returns/min'], -0.56);
  assert.equal(m['critic/values/mean'], undefined, 'no critic metrics without gae');
});

test('computeAdvantages: tokenKl without klCoef only measures the KL (kl_coef 0); klCoef needs tokenKl', () => {
  const base = {
    scores: K_SCORES,
    mask: K_MASK,
    lastIndex: K_LAST,
    normScores: normalizeScores(K_SCORES, K_KEYS, normTypesOf('mean', 'traj_group_id')),
    gamma: 1,
    whiten: false,
  };
  const out = computeAdvantages({ ...base, tokenKl: K_KL });
  closeM(out.advantages, [
    [0.5, 0.5, 0.5, 0],
    [-0.5, 0, -0.5, -0.5],
    [0, 0, 0, 0],
  ]);
  assert.ok(Math.abs(out.metrics['critic/kl'] - K_BATCH_KL) < 1e-8);
  assert.equal(out.metrics['critic/kl_coef'], 0);
  assert.equal(computeAdvantages(base).metrics['critic/kl'], undefined, 'not measured without a reference');
  assert.throws(() => computeAdvantages({ ...base, klCoef: 0.1 }), /klCoef is given but tokenKl is missing/);
  assert.throws(() => computeAdvantages({ ...base, tokenKl: [[0]], klCoef: 0.1 }), /tokenKl has 1 rows; expected 3/);
  assert.throws(() => computeAdvantages({ ...base, tokenKl: K_KL, klCoef: -1 }), /klCoef must be a finite number >= 0, got -1/);
});

test('computeAdvantages: agentic_reinforce with token KL uses R at each turn end', () => {
  // row 1 has turns [0] and [2, 3]: C = R[3] = -0.54 for turn 2 then C = R[0] + C = -0.02 - 0.54 = -0.56 for turn 1;
  // row 0 one turn [0..2]: C = R[2] = 0.47; row 2 one turn [1]: R[1] = -0.05
  const out = computeAdvantages({
    scores: K_SCORES,
    mask: K_MASK,
    lastIndex: K_LAST,
    normScores: normalizeScores(K_SCORES, K_KEYS, normTypesOf('mean', 'traj_group_id')),
    gamma: 1,
    whiten: false,
    tokenKl: K_KL,
    klCoef: 0.1,
    advEstimator: 'agentic_reinforce',
  });
  closeM(
    out.advantages,
    [
      [0.47, 0.47, 0.47, 0],
      [-0.56, 0, -0.54, -0.54],
      [0, -0.05, 0, 0],
    ],
    1e-12,
  );
});

test('reward_clip, the smallest case: the token reward is clamped again after beta * KL (ROLL 0.5)', () => {
  // mask [0, 1], score 0.4, reward_clip 0.5, beta 1, kl_penalty kl with old -1.0, ref -0.5: kl = old - ref = -0.5,
  // R = 0.4 - 1 * (-0.5) = 0.9, clamped to 0.5. ROLL compute_token_reward: token_level_rewards [[0, 0.5]],
  // critic/token_reward_clip_frac 0.5 (1 of its 2 slots), critic/reward_clip_frac 0 (0.4 was inside).
  const out = computeAdvantages({
    scores: [0.4],
    mask: [[0, 1]],
    lastIndex: [1],
    normScores: normalizeScores([0.4], ['batch'], normTypesOf('identity', 'batch')),
    gamma: 1,
    whiten: false,
    rewardClip: 0.5,
    tokenKl: [[0, -0.5]],
    klCoef: 1,
  });
  closeM(out.advantages, [[0, 0.5]], 1e-12);
  assert.equal(out.metrics['critic/token_reward_clip_frac'], 0.5);
  assert.equal(out.metrics['critic/reward_clip_frac'], 0);
  assert.equal(out.metrics['critic/rewards/mean'], 0.5);
  assert.ok(Math.abs(out.metrics['critic/kl'] + 0.5) < 1e-7);
  assert.equal(out.metrics['critic/kl_coef'], 1);
});
