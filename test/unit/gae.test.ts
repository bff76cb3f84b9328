import { test } from 'node:test';
import assert from 'node:assert/strict';
import { computeAdvantages, gaeAdvantages } from '../../src/algo/advantages';
import { normTypesOf } from '../../src/algo/normalize';

const closeM = (actual: number[][], expected: number[][], tol = 1e-12): void => {
  assert.equal(actual.length, expected.length);
  actual.forEach((row, i) => {
    assert.equal(row.length, expected[i].length);
    row.forEach((a, t) => assert.ok(Math.abs(a - expected[i][t]) <= tol, `[${i}][${t}] ${a} vs ${expected[i][t]}`));
  });
};

// Row 0: one turn [0..2] then padding; row 1: two turns [0] and [2, 3] with a prompt slot at 1.
const R = [[0, 0, 1, 0], [0, 0, 0, -1]];
const MASK = [[1, 1, 1, 0], [1, 0, 1, 1]];
// 7 and 5 sit off the mask: values are multiplied by the mask first, so they act as 0.
const V = [[0.5, 0.4, 0.9, 7], [0.2, 5, -0.1, -0.5]];

test('gaeAdvantages: gamma 0.9, lambd 0.5 (gamma*lambd = 0.45), by hand', () => {
  // row 0, Vm = [0.5, 0.4, 0.9, 0]:
  //   t3: delta = 0 + 0.9*0 - 0 = 0                       A = 0
  //   t2: delta = 1 + 0.9*0 - 0.9 = 0.1                   A = 0.1
  //   t1: delta = 0 + 0.9*0.9 - 0.4 = 0.41                A = 0.41 + 0.45*0.1 = 0.455
  //   t0: delta = 0 + 0.9*0.4 - 0.5 = -0.14               A = -0.14 + 0.45*0.455 = 0.06475
  // row 1, Vm = [0.2, 0, -0.1, -0.5]:
  //   t3: delta = -1 + 0 + 0.5 = -0.5                     A = -0.5
  //   t2: delta = 0 + 0.9*(-0.5) + 0.1 = -0.35            A = -0.35 + 0.45*(-0.5) = -0.575
  //   t1: delta = 0 + 0.9*(-0.1) - 0 = -0.09              A = -0.09 + 0.45*(-0.575) = -0.34875
  //   t0: delta = 0 + 0.9*0 - 0.2 = -0.2                  A = -0.2 + 0.45*(-0.34875) = -0.3569375
  const out = gaeAdvantages(R, V, MASK, 0.9, 0.5);
  closeM(out.advantages, [[0.06475, 0.455, 0.1, 0], [-0.3569375, -0.34875, -0.575, -0.5]]);
  // returns = A + Vm
  closeM(out.returns, [[0.56475, 0.855, 1.0, 0], [-0.1569375, -0.34875, -0.675, -1.0]]);
});

test('gaeAdvantages: lambd 1, gamma 1 telescopes to sum_{k>=t} R_k - V_t; lambd 0 is the TD error', () => {
  const one = gaeAdvantages(R, V, MASK, 1, 1);
  closeM(one.advantages, [[1 - 0.5, 1 - 0.4, 1 - 0.9, 0], [-1 - 0.2, -1 - 0, -1 + 0.1, -1 + 0.5]]);
  closeM(one.returns, [[1, 1, 1, 0], [-1, -1, -1, -1]]);
  // lambd 0, gamma 0.9: the deltas above
  closeM(gaeAdvantages(R, V, MASK, 0.9, 0).advantages, [[-0.14, 0.41, 0.1, 0], [-0.2, -0.09, -0.35, -0.5]]);
});

test('gaeAdvantages: errors', () => {
  assert.throws(() => gaeAdvantages(R, V, MASK, 1.1, 0.5), /gamma must be in \[0, 1\], got 1.1/);
  assert.throws(() => gaeAdvantages(R, V, MASK, 1, -0.5), /lambd must be in \[0, 1\], got -0.5/);
  assert.throws(() => gaeAdvantages(R, [[0, 0, 0]], MASK, 1, 1), /values has 1 rows; expected 2/);
  assert.throws(() => gaeAdvantages(R, V, [[1, 1, 1, 0], [1, 0]], 1, 1), /mask\[1\] has length 2; expected 4/);
});

// End to end with a singleton group and token KL: the same batch as advantages.test.ts (B = 3, T = 4).
const SCORES = [1, 0, 2];
const KEYS = ['g', 'g', 's']; // mean: r = 0.5, -0.5 and the singleton 0
const E_MASK = [[1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 0, 0]];
const LAST = [2, 3, 1];
const KL = [[0.1, -0.2, 0.3, 9], [0.2, 9, 0, 0.4], [9, 0.5, 9, 9]];
const VALUES = [[0.5, 0.4, 0.9, 7], [0.2, 5, -0.1, -0.5], [3, 0.1, 3, 3]];
// R with beta 0.1: [[-0.01, 0.02, 0.47, 0], [-0.02, 0, 0, -0.54], [0, -0.05, 0, 0]]; suffix sums G:
// [[0.48, 0.49, 0.47, 0], [-0.56, -0.54, -0.54, -0.54], [-0.05, -0.05, 0, 0]]; Vm = [[0.5, 0.4, 0.9, 0], [0.2, 0, -0.1, -0.5], [0, 0.1, 0, 0]]
// gamma = lambd = 1: A = G - Vm = [[-0.02, 0.09, -0.43, 0], [-0.76, -0.54, -0.44, -0.04], [-0.05, -0.15, 0, 0]], returns = G
const input = {
  scores: SCORES, groupKeys: KEYS, mask: E_MASK, lastIndex: LAST, norm: normTypesOf('mean', 'traj_group_id'), gamma: 1, lambd: 1,
  whiten: false, advEstimator: 'gae', values: VALUES, tokenKl: KL, klCoef: 0.1,
};

test('computeAdvantages gae: A = G - V on masked slots, returns = A + V for the critic, values metrics', () => {
  const out = computeAdvantages(input);
  closeM(out.advantages, [[-0.02, 0.09, -0.43, 0], [-0.76, 0, -0.44, -0.04], [0, -0.15, 0, 0]]);
  closeM(out.returns, [[0.48, 0.49, 0.47, 0], [-0.56, -0.54, -0.54, -0.54], [-0.05, -0.05, 0, 0]]);
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
});

test('computeAdvantages gae: whitening (masked, unbiased) then advantage_clip 1', () => {
  // n = 7, mu = -1.75/7 = -0.25; deviations 0.23, 0.34, -0.18, -0.51, -0.19, 0.21, 0.10;
  // squares sum 0.0529 + 0.1156 + 0.0324 + 0.2601 + 0.0361 + 0.0441 + 0.01 = 0.5512; var = 0.5512/7 * 7/6 = 0.0918667;
  // sd = sqrt(0.0918667 + 1e-8) = 0.3030952; whitened = deviation / sd:
  //   0.7588376, 1.1217599, -0.5938729, -1.6826399, -0.6268658, 0.6928517, 0.3299294
  const w = computeAdvantages({ ...input, whiten: true });
  closeM(w.advantages, [[0.7588376, 1.1217599, -0.5938729, 0], [-1.6826399, 0, -0.6268658, 0.6928517], [0, 0.3299294, 0, 0]], 1e-6);
  // returns stay unwhitened
  closeM(w.returns, [[0.48, 0.49, 0.47, 0], [-0.56, -0.54, -0.54, -0.54], [-0.05, -0.05, 0, 0]]);
  const c = computeAdvantages({ ...input, whiten: true, advantageClip: 1 });
  closeM(c.advantages, [[0.7588376, 1, -0.5938729, 0], [-1, 0, -0.6268658, 0.6928517], [0, 0.3299294, 0, 0]], 1e-6);
  assert.ok(Math.abs(c.metrics['critic/advantage_clip_frac'] - 2 / 7) < 1e-12); // 1.12 and -1.68 of 7
});

test('computeAdvantages gae: whitening is skipped when sum(mask) <= 1', () => {
  // one sampled token at t 1, score 1 (identity), V = [0.3, 0.6] -> Vm = [0, 0.6]; gamma = lambd = 1:
  // A1 = 1 - 0.6 = 0.4, A0 = 1 - 0 = 1 (off the mask) -> masked [0, 0.4]; whitening would need n >= 2
  const out = computeAdvantages({
    scores: [1], groupKeys: ['batch'], mask: [[0, 1]], lastIndex: [1], norm: normTypesOf('identity', 'traj_group_id'), gamma: 1, lambd: 1,
    whiten: true, advEstimator: 'gae', values: [[0.3, 0.6]],
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
