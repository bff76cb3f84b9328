import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { aggLoss, entropyBonus, maskedMean, ppoLoss, valueLoss, VALUE_STAT_NAMES, type LossAggMode } from '../../src/algo/loss';

before(async () => {
  await tf.setBackend('wasm');
  await tf.ready();
  assert.equal(tf.getBackend(), 'wasm');
});

const near = (a: number, b: number, tol = 1e-5, what = ''): void => assert.ok(Math.abs(a - b) <= tol, `${what} ${a} vs ${b}`);
const t2 = (rows: number[][]): tf.Tensor2D => tf.tensor2d(rows, undefined, 'float32');
const ln = Math.log;

// ratios (old logp = 0): row0 [1.5, 0.5, 1.0], row1 [1.1, 2.0 (padding), 0.7]
const LOGP = [[ln(1.5), ln(0.5), 0], [ln(1.1), ln(2), ln(0.7)]];
const OLD = [[0, 0, 0], [0, 0, 0]];
const ADV = [[1, 1, -1], [-1, 5, 2]];
const MASK = [[1, 1, 1], [1, 0, 1]];
// pg with eps 0.2 (range [0.8, 1.2]):
//  r 1.5 A 1: -min(1.5, 1.2) = -1.2 | r 0.5 A 1: -min(0.5, 0.8) = -0.5 | r 1 A -1: 1
//  r 1.1 A -1: 1.1 | padding | r 0.7 A 2: -min(1.4, 1.6) = -1.4      masked sum = -1.0
const EXPECTED: Record<LossAggMode, number> = {
  'token-mean': -1.0 / 5,
  'seq-mean-token-mean': (-0.7 / 3 + -0.3 / 2) / 2,
  'seq-mean-token-sum': -1.0 / 2,
  'seq-mean-token-sum-norm': -1.0 / 3,
};

test('ppoLoss: all four aggregation modes, hand-computed', () => {
  for (const mode of Object.keys(EXPECTED) as LossAggMode[]) {
    tf.tidy(() => {
      const out = ppoLoss({ logp: t2(LOGP), oldLogp: t2(OLD), advantages: t2(ADV), mask: t2(MASK) }, { pgClip: 0.2, lossAggMode: mode });
      near(out.loss.dataSync()[0], EXPECTED[mode], 1e-5, mode);
      near(out.stats()['actor/pg_loss'], EXPECTED[mode], 1e-5, mode);
    });
  }
});

test('ppoLoss stats: clip fractions, ratio stats, approx KL (masked)', () => {
  const before = tf.memory().numTensors;
  const stats = tf.tidy(() =>
    ppoLoss({ logp: t2(LOGP), oldLogp: t2(OLD), advantages: t2(ADV), mask: t2(MASK) }, { pgClip: 0.2, lossAggMode: 'token-mean' }).stats());
  assert.equal(tf.memory().numTensors, before, 'no tensors leak once stats() is read');
  const d = [ln(1.5), ln(0.5), 0, ln(1.1), ln(0.7)];
  const expected: Record<string, number> = {
    'actor/pg_loss': -0.2,
    'actor/clipfrac_high': 1 / 5, // 1.5
    'actor/clipfrac_low': 2 / 5, // 0.5, 0.7
    'actor/clipfrac': 3 / 5,
    'actor/ratio_mean': (1.5 + 0.5 + 1 + 1.1 + 0.7) / 5,
    'actor/ratio_max': 1.5,
    'actor/ratio_min': 0.5,
    'actor/approxkl': d.reduce((s, x) => s + 0.5 * x * x, 0) / 5,
    'actor/policykl': -d.reduce((s, x) => s + x, 0) / 5,
  };
  assert.deepEqual(Object.keys(stats).sort(), Object.keys(expected).sort());
  for (const k of Object.keys(expected)) near(stats[k], expected[k], 1e-5, k);
});

test('ppoLoss gradient w.r.t. logp: 0 where the clip is active, -ratio*A/N elsewhere, 0 on padding', () => {
  const g = tf.tidy(() => {
    const f = (lp: tf.Tensor): tf.Scalar =>
      ppoLoss({ logp: lp as tf.Tensor2D, oldLogp: t2(OLD), advantages: t2(ADV), mask: t2(MASK) }, { pgClip: 0.2, lossAggMode: 'token-mean' }).loss;
    return tf.grad(f)(t2(LOGP)).arraySync() as number[][];
  });
  const expected = [[0, -0.5 / 5, 1 / 5], [1.1 / 5, 0, -1.4 / 5]];
  g.forEach((row, i) => row.forEach((x, t) => near(x, expected[i][t], 1e-5, `grad[${i}][${t}]`)));
});

test('clip-higher (use_pg_clip_range) and dual clip', () => {
  tf.tidy(() => {
    // ratios 1.25 (A 1), 3 (A -1), 0.5 (A -1), 3 (A 1); eps_lo 0.2, eps_hi 0.28
    const logp = t2([[ln(1.25), ln(3), ln(0.5), ln(3)]]);
    const old = t2([[0, 0, 0, 0]]);
    const adv = t2([[1, -1, -1, 1]]);
    const mask = t2([[1, 1, 1, 1]]);
    const mk = (opts: Parameters<typeof ppoLoss>[1]) => ppoLoss({ logp, oldLogp: old, advantages: adv, mask }, opts);
    // symmetric 0.2: -min(1.25,1.2)=-1.2 | -min(-3,-1.2)=3 | -min(-0.5,-0.8)=0.8 | -min(3,1.2)=-1.2
    near(mk({ pgClip: 0.2, lossAggMode: 'seq-mean-token-sum' }).loss.dataSync()[0], -1.2 + 3 + 0.8 - 1.2);
    // clip-higher: first term -1.25, last -1.28
    const hi = mk({ pgClip: 0.2, usePgClipRange: true, pgClipLow: 0.2, pgClipHigh: 0.28, lossAggMode: 'seq-mean-token-sum' });
    near(hi.loss.dataSync()[0], -1.25 + 3 + 0.8 - 1.28);
    near(hi.stats()['actor/clipfrac_high'], 2 / 4);
    near(hi.stats()['actor/clipfrac_low'], 1 / 4);
    // dual clip c = 1 + 2*0.2 = 1.4: A<0 terms become min(3, 1.4) = 1.4 and min(0.8, 1.4) = 0.8
    near(mk({ pgClip: 0.2, dualClip: true, lossAggMode: 'seq-mean-token-sum' }).loss.dataSync()[0], -1.2 + 1.4 + 0.8 - 1.2);
  });
});

test('aggLoss: sequences without sampled tokens; maskedMean of an empty mask is 0', () => {
  tf.tidy(() => {
    const v = t2([[1, 2, 3], [4, 100, 6], [7, 8, 9]]);
    const m = t2([[1, 1, 0], [0, 0, 1], [0, 0, 0]]);
    near(aggLoss(v, m, 'token-mean').dataSync()[0], (1 + 2 + 6) / 3);
    near(aggLoss(v, m, 'seq-mean-token-mean').dataSync()[0], (1.5 + 6) / 2); // row 2 skipped
    near(aggLoss(v, m, 'seq-mean-token-sum').dataSync()[0], 9 / 3); // all B rows
    near(aggLoss(v, m, 'seq-mean-token-sum-norm').dataSync()[0], 9 / 3); // T = 3
    const zero = t2([[0, 0], [0, 0]]);
    near(maskedMean(t2([[1, 2], [3, 4]]), zero).dataSync()[0], 0);
    near(aggLoss(t2([[1, 2], [3, 4]]), zero, 'seq-mean-token-mean').dataSync()[0], 0);
    const s = ppoLoss({ logp: zero, oldLogp: zero, advantages: zero, mask: zero }, { pgClip: 0.2, lossAggMode: 'token-mean' }).stats();
    assert.equal(s['actor/ratio_max'], 1);
    assert.equal(s['actor/ratio_min'], 1);
  });
});

test('errors: shapes, clip values, mode', () => {
  tf.tidy(() => {
    const a = t2([[0, 0]]);
    assert.throws(() => ppoLoss({ logp: a, oldLogp: t2([[0]]), advantages: a, mask: a }, { pgClip: 0.2, lossAggMode: 'token-mean' }),
      /oldLogp has shape \[1, 1\] but logp has \[1, 2\]/);
    assert.throws(() => ppoLoss({ logp: a, oldLogp: a, advantages: a, mask: a }, { pgClip: 0, lossAggMode: 'token-mean' }),
      /pg_clip must be a positive finite number, got 0/);
    assert.throws(() => ppoLoss({ logp: a, oldLogp: a, advantages: a, mask: a }, { pgClip: 0.2, lossAggMode: 'sum' as never }),
      /loss_agg_mode "sum" is not known/);
  });
});

test('entropyBonus aggregates the token entropy with loss_agg_mode', () => {
  tf.tidy(() => {
    const e = t2([[1, 2, 3], [4, 5, 6]]);
    const m = t2([[1, 1, 0], [0, 0, 1]]);
    near(entropyBonus(e, m, 'token-mean').dataSync()[0], (1 + 2 + 6) / 3); // 3
    near(entropyBonus(e, m, 'seq-mean-token-mean').dataSync()[0], (1.5 + 6) / 2); // 3.75
    near(entropyBonus(e, m, 'seq-mean-token-sum').dataSync()[0], 9 / 2);
    near(entropyBonus(e, m, 'seq-mean-token-sum-norm').dataSync()[0], 9 / 3);
  });
});

// Value loss, valueClip 0.2. vclipped = O + clamp(V - O, -0.2, 0.2); vf = 0.5 max((V - G)^2, (vclipped - G)^2)
//   (0,0) V 1,    O 0.9,  G 1.5:  diff 0.1  -> vc 1;    l1 0.25, l2 0.25 -> 0.125
//   (0,1) V 0.5,  O 0.5,  G 0:    diff 0    -> vc 0.5;  l1 0.25, l2 0.25 -> 0.125
//   (0,2) V 2,    O 1,    G 1.2:  diff 1    -> vc 1.2;  l1 0.64, l2 0    -> 0.32
//   (1,0) V 0,    O 0.3,  G 0.1:  diff -0.3 -> vc 0.1;  l1 0.01, l2 0    -> 0.005
//   (1,1) padding: V 3, O 0, G 9 (would be 0.5 * 77.44)
//   (1,2) V -2.1, O -1.5, G -2:   diff -0.6 -> vc -1.7; l1 0.01, l2 0.09 -> 0.045 (the clipped term wins: clipfrac)
// masked sum 0.62 over 5 tokens
const V_VALUES = [[1, 0.5, 2], [0, 3, -2.1]];
const V_OLD = [[0.9, 0.5, 1], [0.3, 0, -1.5]];
const V_RET = [[1.5, 0, 1.2], [0.1, 9, -2]];
const V_MASK = [[1, 1, 1], [1, 0, 1]];
const V_EXPECTED: Record<LossAggMode, number> = {
  'token-mean': 0.62 / 5, // 0.124
  'seq-mean-token-mean': (0.57 / 3 + 0.05 / 2) / 2, // (0.19 + 0.025) / 2 = 0.1075
  'seq-mean-token-sum': 0.62 / 2,
  'seq-mean-token-sum-norm': 0.62 / 3,
};

test('valueLoss: clipped critic loss in every aggregation mode, with its stats', () => {
  for (const mode of Object.keys(V_EXPECTED) as LossAggMode[]) {
    tf.tidy(() => {
      const out = valueLoss({ values: t2(V_VALUES), oldValues: t2(V_OLD), returns: t2(V_RET), mask: t2(V_MASK), valueClip: 0.2, mode });
      near(out.loss.dataSync()[0], V_EXPECTED[mode], 1e-6, mode);
      const s = out.stats();
      assert.deepEqual(Object.keys(s), [...VALUE_STAT_NAMES]);
      near(s['critic/vf_loss'], V_EXPECTED[mode], 1e-6, mode);
      near(s['critic/vf_clipfrac'], 1 / 5, 1e-7, 'clipfrac'); // only (1,2)
      near(s['critic/vpred_mean'], (1 + 0.5 + 2 + 0 - 2.1) / 5, 1e-6, 'vpred_mean'); // 0.28
    });
  }
});

test('valueLoss: no clip (value_clip null) is 0.5 (V - G)^2; gradient follows the winning branch', () => {
  tf.tidy(() => {
    // unclipped: 0.125, 0.125, 0.32 | 0.005, (pad), 0.5 * 0.01 = 0.005 -> 0.58 / 5 = 0.116
    const out = valueLoss({ values: t2(V_VALUES), oldValues: t2(V_OLD), returns: t2(V_RET), mask: t2(V_MASK), valueClip: null, mode: 'token-mean' });
    near(out.loss.dataSync()[0], 0.116, 1e-6);
    near(out.stats()['critic/vf_clipfrac'], 0);
    // with clip 0.2, token-mean: d/dV = (V - G)/5 where the unclipped term wins (or ties), 0 where the clipped
    // (constant) term wins: (1 - 1.5)/5 = -0.1, 0.5/5 = 0.1, 0.8/5 = 0.16 | (0 - 0.1)/5 = -0.02, pad 0, clipped 0
    const g = tf.grad((v: tf.Tensor) => valueLoss({
      values: v as tf.Tensor2D, oldValues: t2(V_OLD), returns: t2(V_RET), mask: t2(V_MASK), valueClip: 0.2, mode: 'token-mean',
    }).loss)(t2(V_VALUES)).arraySync() as number[][];
    const expected = [[-0.1, 0.1, 0.16], [-0.02, 0, 0]];
    g.forEach((row, i) => row.forEach((x, t) => near(x, expected[i][t], 1e-6, `grad[${i}][${t}]`)));
    assert.throws(() => valueLoss({ values: t2(V_VALUES), oldValues: t2(V_OLD), returns: t2(V_RET), mask: t2(V_MASK), valueClip: 0, mode: 'token-mean' }),
      /value_clip must be a positive finite number or null, got 0/);
    assert.throws(() => valueLoss({ values: t2(V_VALUES), oldValues: t2([[0]]), returns: t2(V_RET), mask: t2(V_MASK), valueClip: null, mode: 'token-mean' }),
      /oldValues has shape \[1, 1\] but values has \[2, 3\]/);
  });
});

test('stats() of a loss can be read once (cached) and dispose() frees them unread', () => {
  const before = tf.memory().numTensors;
  const inputs = [t2(V_VALUES), t2(V_OLD), t2(V_RET), t2(V_MASK)];
  const [values, oldValues, returns, mask] = inputs;
  const scope = tf.engine().startScope();
  const read = valueLoss({ values, oldValues, returns, mask, valueClip: 0.2, mode: 'token-mean' });
  const first = read.stats();
  assert.equal(read.stats(), first, 'cached');
  const unread = valueLoss({ values, oldValues, returns, mask, valueClip: 0.2, mode: 'token-mean' });
  unread.dispose();
  assert.throws(() => unread.stats(), /the stats were disposed before being read/);
  tf.engine().endScope(scope);
  inputs.forEach((t) => t.dispose());
  assert.equal(tf.memory().numTensors, before, 'nothing leaks');
});
