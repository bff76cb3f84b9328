import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { klControllerFromConfig, klFull, klPenalty } from '../../../src/algo/kl';
import { klLoss } from '../../../src/algo/loss';
import { initTestBackend } from '../../helpers/backend';

before(initTestBackend);

const t2 = (rows: number[][]): tf.Tensor2D => tf.tensor2d(rows, undefined, 'float32');
const closeM = (actual: number[][], expected: number[][], tol = 1e-6, what = ''): void =>
  actual.forEach((row, i) =>
    row.forEach((a, t) => assert.ok(Math.abs(a - expected[i][t]) <= tol, `${what}[${i}][${t}] ${a} vs ${expected[i][t]}`)),
  );

// d = logp - ref: row 0 [0.5, 0, -1], row 1 [-0.1, -2, 19.9]
const LOGP = [
  [-1, -0.5, -2],
  [-0.2, -3, -0.1],
];
const REF = [
  [-1.5, -0.5, -1],
  [-0.1, -1, -20],
];
// k3 with x = ref - logp = -d: exp(x) - x - 1
//   x -0.5: 0.6065307 + 0.5 - 1 = 0.1065307 | x 0: 0 | x 1: 2.7182818 - 2 = 0.7182818
//   x 0.1: 1.1051709 - 1.1 = 0.0051709 | x 2: 7.3890561 - 3 = 4.3890561 | x -19.9: 2.3e-9 + 18.9 = 18.9 -> clamp 10
const K3 = [
  [0.1065307, 0, 0.7182818],
  [0.0051709, 4.3890561, 10],
];

test('klPenalty: kl, abs, mse and k3 (clamped to [-10, 10]), by hand', () => {
  tf.tidy(() => {
    const lp = t2(LOGP),
      rf = t2(REF);
    closeM(
      klPenalty(lp, rf, 'kl').arraySync(),
      [
        [0.5, 0, -1],
        [-0.1, -2, 19.9],
      ],
      1e-6,
      'kl',
    );
    closeM(
      klPenalty(lp, rf, 'abs').arraySync(),
      [
        [0.5, 0, 1],
        [0.1, 2, 19.9],
      ],
      1e-6,
      'abs',
    );
    // 0.5 d^2: 0.125, 0, 0.5 | 0.005, 2, 198.005
    closeM(
      klPenalty(lp, rf, 'mse').arraySync(),
      [
        [0.125, 0, 0.5],
        [0.005, 2, 198.005],
      ],
      1e-4,
      'mse',
    );
    closeM(klPenalty(lp, rf, 'k3').arraySync(), K3, 1e-6, 'k3');
  });
});

test('klPenalty: full needs klFull; unknown kinds and shape mismatches throw', () => {
  tf.tidy(() => {
    assert.throws(() => klPenalty(t2(LOGP), t2(REF), 'full'), /kl_penalty "full" needs the whole log-softmax/);
    assert.throws(() => klPenalty(t2(LOGP), t2(REF), 'k2' as never), /kl_penalty "k2" is not known; allowed: kl, abs, mse, k3, full/);
    assert.throws(() => klPenalty(t2(LOGP), t2([[0, 0, 0]]), 'kl'), /klPenalty: logp and refLogp: Shapes 2,3 and 1,3 must match/);
  });
});

test('klFull: sum_v p (log p - log q) per position', () => {
  // position 0: p = [0.5, 0.25, 0.25], q = [0.25, 0.5, 0.25]: 0.5 ln 2 + 0.25 ln 0.5 + 0 = 0.25 ln 2 = 0.1732868
  // position 1: p uniform, q = [0.5, 0.25, 0.25]: (ln(2/3) + 2 ln(4/3)) / 3 = (-0.4054651 + 0.5753641) / 3 = 0.0566330
  const p = [
    [
      [0.5, 0.25, 0.25],
      [1 / 3, 1 / 3, 1 / 3],
    ],
  ];
  const q = [
    [
      [0.25, 0.5, 0.25],
      [0.5, 0.25, 0.25],
    ],
  ];
  const got = tf.tidy(() => klFull(tf.log(tf.tensor3d(p)) as tf.Tensor3D, tf.log(tf.tensor3d(q)) as tf.Tensor3D).arraySync());
  closeM(got, [[0.1732868, 0.056633]], 1e-6, 'full');
  assert.throws(() => tf.tidy(() => klFull(tf.zeros([1, 2, 3]), tf.zeros([1, 2, 4]))), /Shapes 1,2,3 and 1,2,4 must match/);
});

test('klLoss: aggLoss of the clamped k3, and its gradient (1 - exp(ref - logp), 0 where clamped)', () => {
  const MASK = [
    [1, 1, 0],
    [1, 1, 1],
  ];
  tf.tidy(() => {
    // token-mean: (0.1065307 + 0 + 0.0051709 + 4.3890561 + 10) / 5 = 14.5007577 / 5 = 2.9001515
    assert.ok(Math.abs(klLoss(t2(LOGP), t2(REF), t2(MASK), 'token-mean').dataSync()[0] - 2.9001515) < 1e-5);
    // seq-mean-token-mean: (0.1065307 / 2 + 14.3942270 / 3) / 2 = (0.0532654 + 4.7980757) / 2 = 2.4256705
    assert.ok(Math.abs(klLoss(t2(LOGP), t2(REF), t2(MASK), 'seq-mean-token-mean').dataSync()[0] - 2.4256705) < 1e-5);
    // seq-mean-token-sum: 14.5007577 / 2; seq-mean-token-sum-norm: 14.5007577 / 3
    assert.ok(Math.abs(klLoss(t2(LOGP), t2(REF), t2(MASK), 'seq-mean-token-sum').dataSync()[0] - 7.2503789) < 1e-5);
    assert.ok(Math.abs(klLoss(t2(LOGP), t2(REF), t2(MASK), 'seq-mean-token-sum-norm').dataSync()[0] - 4.8335859) < 1e-5);
    const g = tf
      .grad((lp: tf.Tensor) => klLoss(lp as tf.Tensor2D, t2(REF), t2(MASK), 'token-mean'))(t2(LOGP))
      .arraySync() as number[][];
    // d/dlogp = (1 - exp(x)) / 5: (1 - 0.6065307)/5 = 0.0786939, 0, masked 0 | (1 - 1.1051709)/5 = -0.0210342,
    // (1 - 7.3890561)/5 = -1.2778112, clamped 0
    closeM(
      g,
      [
        [0.0786939, 0, 0],
        [-0.0210342, -1.2778112, 0],
      ],
      1e-6,
      'grad',
    );
    assert.throws(() => klLoss(t2(LOGP), t2(REF), t2([[1, 1, 1]]), 'token-mean'), /mask has shape \[1, 3\] but logp has \[2, 3\]/);
  });
});

test('KL controller: fixed when target_kl is null', () => {
  const c = klControllerFromConfig({ init_kl_coef: 0.2, target_kl: null, kl_horizon: 10000 });
  assert.equal(c.adaptive, false);
  c.update(5, 128);
  assert.equal(c.value, 0.2);
  // a fixed controller ignores a saved beta: init_kl_coef is the config's word
  assert.equal(klControllerFromConfig({ init_kl_coef: 0.05 }, 0.3).value, 0.05);
});

test('KL controller: adaptive (TRL / ROLL AdaptiveKLController), by hand', () => {
  const c = klControllerFromConfig({ init_kl_coef: 0.2, target_kl: 0.1, kl_horizon: 10000 });
  assert.equal(c.adaptive, true);
  // KL 0.15: e = clip(0.15/0.1 - 1 = 0.5, +-0.2) = 0.2; mult = 1 + 0.2 * 128/10000 = 1.00256; beta = 0.200512
  c.update(0.15, 128);
  assert.ok(Math.abs(c.value - 0.200512) < 1e-15);
  // KL 0.09: e = -0.1; mult = 1 - 0.1 * 64/10000 = 0.99936; beta = 0.200512 * 0.99936 = 0.20038367232
  c.update(0.09, 64);
  assert.ok(Math.abs(c.value - 0.20038367232) < 1e-12);
  // KL 0: e = clip(-1) = -0.2; mult = 1 - 0.2 * 10000/10000 = 0.8
  c.update(0, 10000);
  assert.ok(Math.abs(c.value - 0.20038367232 * 0.8) < 1e-12);
  // resume continues from the saved beta; kl_horizon defaults to 10000
  const r = klControllerFromConfig({ init_kl_coef: 0.2, target_kl: 0.1 }, 0.3);
  assert.equal(r.value, 0.3);
  r.update(0.2, 100); // e = 0.2 (clipped from 1): mult = 1.002
  assert.ok(Math.abs(r.value - 0.3006) < 1e-15);
});

test('KL controller: errors name the key', () => {
  assert.throws(() => klControllerFromConfig({ init_kl_coef: -1 }), /init_kl_coef = -1 is invalid; allowed: a finite number >= 0/);
  assert.throws(
    () => klControllerFromConfig({ init_kl_coef: 0.1, target_kl: 0 }),
    /target_kl = 0 is invalid; allowed: a finite number > 0 or null/,
  );
  assert.throws(() => klControllerFromConfig({ init_kl_coef: 0.1, kl_horizon: 0 }), /kl_horizon = 0 is invalid/);
  assert.throws(() => klControllerFromConfig({ init_kl_coef: 0.1 }, NaN), /the saved beta = NaN is invalid/);
  const c = klControllerFromConfig({ init_kl_coef: 0.1, target_kl: 0.1 });
  assert.throws(() => c.update(NaN, 1), /currentKl = NaN; allowed: a finite number/);
  assert.throws(() => c.update(0.1, 0), /nSteps = 0; allowed: > 0/);
});
