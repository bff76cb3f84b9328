import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computeAdvantages, gaeAdvantages } from '../../../src/algo/advantages';
import { normalizeScores, normTypesOf } from '../../../src/algo/normalize';

const closeM = (actual: number[][], expected: number[][], tol = 1e-12): void => {
  assert.equal(actual.length, expected.length);
  actual.forEach((row, i) => {
    assert.equal(row.length, expected[i].length);
    row.forEach((a, t) => assert.ok(Math.abs(a - expected[i][t]) <= tol, `[${i}][${t}] ${a} vs ${expected[i][t]}`));
  });
};

// Row 0: one turn [0..2], then the slot after its last token; row 1: two turns [0] and [2, 3] with an observation slot at 1.
const R = [
  [0, 0, 1, 0],
  [0, 0, 0, -1],
];
// 7 and 5 sit off the mask: as in ROLL, the critic's values enter GAE unmasked.
const V = [
  [0.5, 0.4, 0.9, 7],
  [0.2, 5, -0.1, -0.5],
];

test('GAE, the smallest case: ROLL A = 0.835, returns 1.035 (the value after the last sampled token counts)', () => {
  // mask [0, 1, 0], score 1 on slot 1, gamma 1, lambd 0.95, V = [0.5, 0.2, 0.7]; ROLL agentic_compute_advantage
  // (compute_gae_advantage_return on the unmasked values): A = [0, 0.835, -0] after the mask, returns [0.99325, 1.035, 0]
  const out = gaeAdvantages([[0, 1, 0]], [[0.5, 0.2, 0.7]], 1, 0.95);
  // t2: delta = -0.7; t1: delta = 1 + 0.7 - 0.2 = 1.5, A = 1.5 + 0.95 * -0.7 = 0.835; t0: 0 + 0.2 - 0.5 + 0.95 * 0.835
  closeM(out.advantages, [[-0.3 + 0.95 * 0.835, 0.835, -0.7]]);
  closeM(out.returns, [[0.99325, 1.035, 0]]);
});

test('gaeAdvantages: gamma 0.9, lambd 0.5 (gamma*lambd = 0.45), by hand; ROLL compute_gae_advantage_return agrees', () => {
  // row 0, V = [0.5, 0.4, 0.9, 7]:
  //   t3: delta = 0 + 0.9*0 - 7 = -7                      A = -7
  //   t2: delta = 1 + 0.9*7 - 0.9 = 6.4                   A = 6.4 + 0.45*(-7) = 3.25
  //   t1: delta = 0 + 0.9*0.9 - 0.4 = 0.41                A = 0.41 + 0.45*3.25 = 1.8725
  //   t0: delta = 0 + 0.9*0.4 - 0.5 = -0.14               A = -0.14 + 0.45*1.8725 = 0.702625
  // row 1, V = [0.2, 5, -0.1, -0.5]:
  //   t3: delta = -1 + 0 + 0.5 = -0.5                     A = -0.5
  //   t2: delta = 0 + 0.9*(-0.5) + 0.1 = -0.35            A = -0.35 + 0.45*(-0.5) = -0.575
  //   t1: delta = 0 + 0.9*(-0.1) - 5 = -5.09              A = -5.09 + 0.45*(-0.575) = -5.34875
  //   t0: delta = 0 + 0.9*5 - 0.2 = 4.3                   A = 4.3 + 0.45*(-5.34875) = 1.8930625
  const out = gaeAdvantages(R, V, 0.9, 0.5);
  closeM(out.advantages, [
    [0.702625, 1.8725, 3.25, -7],
    [1.8930625, -5.34875, -0.575, -0.5],
  ]);
  // returns = A + V
  closeM(out.returns, [
    [1.202625, 2.2725, 4.15, 0],
    [2.0930625, -0.34875, -0.675, -1.0],
  ]);
});

test('gaeAdvantages: lambd 1, gamma 1 telescopes to sum_{k>=t} R_k - V_t; lambd 0 is the TD error', () => {
  const one = gaeAdvantages(R, V, 1, 1);
  closeM(one.advantages, [
    [1 - 0.5, 1 - 0.4, 1 - 0.9, -7],
    [-1 - 0.2, -1 - 5, -1 + 0.1, -1 + 0.5],
  ]);
  closeM(one.returns, [
    [1, 1, 1, 0],
    [-1, -1, -1, -1],
  ]);
  // lambd 0, gamma 0.9: the deltas above
  closeM(gaeAdvantages(R, V, 0.9, 0).advantages, [
    [-0.14, 0.41, 6.4, -7],
    [4.3, -5.09, -0.35, -0.5],
  ]);
});

test('gaeAdvantages: errors', () => {
  assert.throws(() => gaeAdvantages(R, V, 1.1, 0.5), /gamma must be in \[0, 1\], got 1.1/);
  assert.throws(() => gaeAdvantages(R, V, 1, -0.5), /lambd must be in \[0, 1\], got -0.5/);
  assert.throws(() => gaeAdvantages(R, [[0, 0, 0]], 1, 1), /values has 1 rows; expected 2/);
  assert.throws(
    () =>
      gaeAdvantages(
        R,
        [
          [0, 0, 0, 0],
          [0, 0],
        ],
        1,
        1,
      ),
    /values\[1\] has length 2; expected 4/,
  );
});

// End to end with a singleton group and token KL: the same batch as advantages.test.ts (B = 3, T = 4).
const SCORES = [1, 0, 2];
const KEYS = ['g', 'g', 's']; // mean: r = 0.5, -0.5 and the singleton 0
const E_MASK = [
  [1, 1, 1, 0],
  [1, 0, 1, 1],
  [0, 1, 0, 0],
];
const LAST = [2, 3, 1];
const KL = [
  [0.1, -0.2, 0.3, 9],
  [0.2, 9, 0, 0.4],
  [9, 0.5, 9, 9],
];
const VALUES = [
  [0.5, 0.4, 0.9, 7],
  [0.2, 5, -0.1, -0.5],
  [3, 0.1, 3, 3],
];
// R with beta 0.1: [[-0.01, 0.02, 0.47, 0], [-0.02, 0, 0, -0.54], [0, -0.05, 0, 0]]; suffix sums G:
// [[0.48, 0.49, 0.47, 0], [-0.56, -0.54, -0.54, -0.54], [-0.05, -0.05, 0, 0]]; gamma = lambd = 1: A = G - V (the later
// values telescope away, so the off-mask 7, 5 and 3 only reach A on their own slots, which the mask zeroes), returns = G.
// ROLL (compute_response_level_rewards -> compute_token_reward -> agentic_compute_advantage) gives the same to 1e-6.
const input = {
  scores: SCORES,
  mask: E_MASK,
  lastIndex: LAST,
  normScores: normalizeScores(SCORES, KEYS, normTypesOf('mean', 'traj_group_id')),
  gamma: 1,
  lambd: 1,
  whiten: false,
  advEstimator: 'gae',
  values: VALUES,
  tokenKl: KL,
  klCoef: 0.1,
};

test('computeAdvantages gae: A = G - V on masked slots, returns = A + V for the critic, values metrics', () => {
  const out = computeAdvantages(input);
  closeM(out.advantages, [
    [-0.02, 0.09, -0.43, 0],
    [-0.76, 0, -0.44, -0.04],
    [0, -0.15, 0, 0],
  ]);
  closeM(out.returns, [
    [0.48, 0.49, 0.47, 0],
    [-0.56, -0.54, -0.54, -0.54],
    [-0.05, -0.05, 0, 0],
  ]);
  const m = out.metrics;
  // masked values 0.5, 0.4, 0.9, 0.2, -0.1, -0.5, 0.1: sum 1.5, mean 0.2142857
  assert.ok(Math.abs(m['critic/values/mean'] - 1.5 / 7) < 1e-12);
  assert.equal(m['critic/values/max'], 0.9);
  assert.equal(m['critic/values/min'], -0.5);
  // masked advantages -0.02, 0.09, -0.43, -0.76, -0.44, -0.04, -0.15: sum -1.75, mean -0.25
  assert.ok(Math.abs(m['critic/advantages/mean'] + 0.25) < 1e-12);
  assert.ok(Math.abs(m['critic/advantages/max'] - 0.09) < 1e-12);
  assert.ok(Math.abs(m['critic/advantages/min'] + 0.76) < 1e-12);
  assert.ok(Math.abs(m['critic/returns/mean'] + 0.25 / 7) < 1e-12);
  assert.equal(m['critic/kl_coef'], 0.1);
  // per trajectory, the sum of its final token rewards: 0.48, -0.56, -0.05 (ROLL -0.04333333 / 0.48 / -0.56)
  assert.ok(Math.abs(m['critic/rewards/mean'] - (0.48 - 0.56 - 0.05) / 3) < 1e-12);
  assert.ok(Math.abs(m['critic/rewards/max'] - 0.48) < 1e-12 && Math.abs(m['critic/rewards/min'] + 0.56) < 1e-12);
});

test('computeAdvantages gae: whitening (masked, unbiased) then advantage_clip 1', () => {
  // n = 7, mu = -1.75/7 = -0.25; deviations 0.23, 0.34, -0.18, -0.51, -0.19, 0.21, 0.10;
  // squares sum 0.0529 + 0.1156 + 0.0324 + 0.2601 + 0.0361 + 0.0441 + 0.01 = 0.5512; var = 0.5512/7 * 7/6 = 0.0918667;
  // sd = sqrt(0.0918667 + 1e-8) = 0.3030952; whitened = deviation / sd:
  //   0.7588376, 1.1217599, -0.5938729, -1.6826399, -0.6268658, 0.6928517, 0.3299294
  const w = computeAdvantages({ ...input, whiten: true });
  closeM(
    w.advantages,
    [
      [0.7588376, 1.1217599, -0.5938729, 0],
      [-1.6826399, 0, -0.6268658, 0.6928517],
      [0, 0.3299294, 0, 0],
    ],
    1e-6,
  );
  // returns stay unwhitened
  closeM(w.returns, [
    [0.48, 0.49, 0.47, 0],
    [-0.56, -0.54, -0.54, -0.54],
    [-0.05, -0.05, 0, 0],
  ]);
  const c = computeAdvantages({ ...input, whiten: true, advantageClip: 1 });
  closeM(
    c.advantages,
    [
      [0.7588376, 1, -0.5938729, 0],
      [-1, 0, -0.6268658, 0.6928517],
      [0, 0.3299294, 0, 0],
    ],
    1e-6,
  );
  // 1.12 and -1.68 clipped, counted over all B x T = 12 slots as ROLL's compute_clip_fraction does: ROLL 0.16666667
  assert.ok(Math.abs(c.metrics['critic/advantage_clip_frac'] - 2 / 12) < 1e-12);
});

test('computeAdvantages gae: whitening is skipped when sum(mask) <= 1', () => {
  // one sampled token at t 1, score 1 (identity), V = [0.3, 0.6]; gamma = lambd = 1:
  // A1 = 1 - 0.6 = 0.4, A0 = 1 - 0.3 = 0.7 (off the mask) -> masked [0, 0.4]; whitening would need n >= 2 (ROLL: the same)
  const out = computeAdvantages({
    scores: [1],
    mask: [[0, 1]],
    lastIndex: [1],
    normScores: normalizeScores([1], ['batch'], normTypesOf('identity', 'traj_group_id')),
    gamma: 1,
    lambd: 1,
    whiten: true,
    advEstimator: 'gae',
    values: [[0.3, 0.6]],
  });
  closeM(out.advantages, [[0, 0.4]]);
  closeM(out.returns, [[1, 1]]);
});

test('computeAdvantages gae: needs values and lambd', () => {
  const { values: _v, ...noValues } = input;
  assert.throws(() => computeAdvantages(noValues), /adv_estimator gae needs the critic values \(\[B\]\[T\] `values`\)/);
  const { lambd: _l, ...noLambd } = input;
  assert.throws(() => computeAdvantages(noLambd), /adv_estimator gae needs `lambd`/);
  assert.throws(() => computeAdvantages({ ...input, values: [[0, 0, 0, 0]] }), /values has 1 rows; expected 3/);
});

test("values past the slot after a trajectory's end: starpo's zeros and ROLL's pad-token values agree when gamma*lambd = 1, and only then", () => {
  // One turn [0..2] scored 1, then the slot after its last token (V 0.7, read by both), then 3 pad slots: ROLL
  // (agentic_compute_advantage) feeds its critic's outputs there ([0.3, -0.2, 0.6] stand for them), starpo 0.
  const rewards = [[0, 0, 1, 0, 0, 0, 0]];
  const start = [0.5, 0.4, 0.9, 0.7];
  const roll = [[...start, 0.3, -0.2, 0.6]];
  const starpo = [[...start, 0, 0, 0]];
  const onTurn = (v: number[][], gamma: number, lambd: number) => gaeAdvantages(rewards, v, gamma, lambd).advantages[0].slice(0, 3);
  // gamma lambd = 1: the pad TD errors telescope to -V[4] + V[4] ... = 0 past the slot after the end
  closeM([onTurn(roll, 1, 1)], [onTurn(starpo, 1, 1)]);
  // gamma 1, lambd 0.95, by hand: ROLL's pad advantages A6 = -0.6, A5 = 0.8 + 0.95 A6 = 0.23,
  // A4 = -0.5 + 0.95 A5 = -0.2815; at the slot after the end ROLL's delta is 0.3 - 0.7 and starpo's 0 - 0.7, so
  // A3 differs by 0.3 + 0.95 A4 = 0.032575, and each earlier slot by 0.95 times the next one's difference
  const diff = onTurn(roll, 1, 0.95).map((a, t) => a - onTurn(starpo, 1, 0.95)[t]);
  closeM([diff], [[0.95 ** 3 * 0.032575, 0.95 ** 2 * 0.032575, 0.95 * 0.032575]]);
});
