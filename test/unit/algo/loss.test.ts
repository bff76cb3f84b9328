import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import {
  aggDenominators,
  aggLoss,
  entropyBonus,
  klLoss,
  type LossAggMode,
  PPO_STATS,
  ppoLoss,
  StatAccumulator,
  VALUE_STATS,
  valueLoss,
} from '../../../src/algo/loss';
import { initTestBackend } from '../../helpers/backend';

before(initTestBackend);

const near = (a: number, b: number, tol = 1e-5, what = ''): void => assert.ok(Math.abs(a - b) <= tol, `${what} ${a} vs ${b}`);
const t2 = (rows: number[][]): tf.Tensor2D => tf.tensor2d(rows, undefined, 'float32');
const ln = Math.log;

// ratios (old logp = 0): row0 [1.5, 0.5, 1.0], row1 [1.1, 2.0 (padding), 0.7]
const LOGP = [
  [ln(1.5), ln(0.5), 0],
  [ln(1.1), ln(2), ln(0.7)],
];
const OLD = [
  [0, 0, 0],
  [0, 0, 0],
];
const ADV = [
  [1, 1, -1],
  [-1, 5, 2],
];
const MASK = [
  [1, 1, 1],
  [1, 0, 1],
];
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

test("ppoLoss stats: ROLL's agentic actor worker definitions (token-mean)", () => {
  const before = tf.memory().numTensors;
  const stats = tf.tidy(() =>
    ppoLoss({ logp: t2(LOGP), oldLogp: t2(OLD), advantages: t2(ADV), mask: t2(MASK) }, { pgClip: 0.2, lossAggMode: 'token-mean' }).stats(),
  );
  assert.equal(tf.memory().numTensors, before, 'no tensors leak once stats() is read');
  // d = logp - old on the sampled tokens; ROLL agentic_actor_worker.py loss_func on the same (masked) inputs gives
  // ppo_ratio_high/low/clipfrac 0.2 / 0.4 / 0.6, clipfrac 0.2, ratio_mean 0.95, ratio_max 1.5, ratio_min 0.5,
  // approxkl 0.0781156, policykl -0.1098094, pg_loss -0.2
  const d = [ln(1.5), ln(0.5), 0, ln(1.1), ln(0.7)];
  const expected: Record<string, number> = {
    'actor/pg_loss': -0.2,
    'actor/clipfrac': 1 / 5, // surr2 < surr1 only at ratio 1.5 with A 1 (0.5 with A 1 and 0.7 with A 2 take surr1)
    'actor/ppo_ratio_high_clipfrac': 1 / 5, // 1.5
    'actor/ppo_ratio_low_clipfrac': 2 / 5, // 0.5, 0.7
    'actor/ppo_ratio_clipfrac': 3 / 5,
    'actor/ratio_mean': ((1.5 + 0.5 + 1) / 3 + (1.1 + 0.7) / 2) / 2, // per sequence: 0.95
    'actor/ratio_max': 1.5,
    'actor/ratio_min': 0.5,
    'actor/approxkl': d.reduce((s, x) => s + 0.5 * x * x, 0) / 5, // 0.0781156
    'actor/policykl': d.reduce((s, x) => s + x, 0) / 5, // logp - old: -0.1098094
  };
  assert.deepEqual(Object.keys(stats).sort(), Object.keys(expected).sort());
  for (const k of Object.keys(expected)) near(stats[k], expected[k], 1e-5, k);
});

test('ppoLoss gradient w.r.t. logp: 0 where the clip is active, -ratio*A/N elsewhere, 0 on padding', () => {
  const g = tf.tidy(() => {
    const f = (lp: tf.Tensor): tf.Scalar =>
      ppoLoss(
        { logp: lp as tf.Tensor2D, oldLogp: t2(OLD), advantages: t2(ADV), mask: t2(MASK) },
        { pgClip: 0.2, lossAggMode: 'token-mean' },
      ).loss;
    return tf.grad(f)(t2(LOGP)).arraySync() as number[][];
  });
  const expected = [
    [0, -0.5 / 5, 1 / 5],
    [1.1 / 5, 0, -1.4 / 5],
  ];
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
    near(hi.stats()['actor/ppo_ratio_high_clipfrac'], 2 / 4);
    near(hi.stats()['actor/ppo_ratio_low_clipfrac'], 1 / 4);
    // dual clip c = 1 + 2*0.2 = 1.4: A<0 terms become min(3, 1.4) = 1.4 and min(0.8, 1.4) = 0.8
    near(mk({ pgClip: 0.2, dualClip: true, lossAggMode: 'seq-mean-token-sum' }).loss.dataSync()[0], -1.2 + 1.4 + 0.8 - 1.2);
  });
});

test('aggLoss: sequences without sampled tokens count in no denominator (ROLL global_valid_samples); empty masks give 0', () => {
  tf.tidy(() => {
    const v = t2([
      [1, 2, 3],
      [4, 100, 6],
      [7, 8, 9],
    ]);
    const m = t2([
      [1, 1, 0],
      [0, 0, 1],
      [0, 0, 0],
    ]);
    near(aggLoss(v, m, 'token-mean').dataSync()[0], (1 + 2 + 6) / 3);
    near(aggLoss(v, m, 'seq-mean-token-mean').dataSync()[0], (1.5 + 6) / 2); // row 2 skipped
    near(aggLoss(v, m, 'seq-mean-token-sum').dataSync()[0], 9 / 2); // the 2 rows with sampled tokens (ROLL agg_loss: 4.5)
    near(aggLoss(v, m, 'seq-mean-token-sum-norm').dataSync()[0], 9 / 3); // T = 3
    const zero = t2([
      [0, 0],
      [0, 0],
    ]);
    near(
      aggLoss(
        t2([
          [1, 2],
          [3, 4],
        ]),
        zero,
        'token-mean',
      ).dataSync()[0],
      0,
    );
    near(
      aggLoss(
        t2([
          [1, 2],
          [3, 4],
        ]),
        zero,
        'seq-mean-token-mean',
      ).dataSync()[0],
      0,
    );
    const s = ppoLoss({ logp: zero, oldLogp: zero, advantages: zero, mask: zero }, { pgClip: 0.2, lossAggMode: 'token-mean' }).stats();
    assert.deepEqual([s['actor/ratio_max'], s['actor/ratio_min']], [-Infinity, Infinity]);
    const acc = new StatAccumulator();
    acc.add(s, PPO_STATS);
    const r = acc.result(1);
    assert.deepEqual([r['actor/ratio_max'], r['actor/ratio_min'], r['actor/pg_loss']], [1, 1, 0], 'no sampled token: ratio 1');
  });
});

test('errors: shapes, clip values, mode', () => {
  tf.tidy(() => {
    const a = t2([[0, 0]]);
    assert.throws(
      () => ppoLoss({ logp: a, oldLogp: t2([[0]]), advantages: a, mask: a }, { pgClip: 0.2, lossAggMode: 'token-mean' }),
      /oldLogp has shape \[1, 1\] but logp has \[1, 2\]/,
    );
    assert.throws(
      () => ppoLoss({ logp: a, oldLogp: a, advantages: a, mask: a }, { pgClip: 0, lossAggMode: 'token-mean' }),
      /pg_clip must be a positive finite number, got 0/,
    );
    assert.throws(
      () => ppoLoss({ logp: a, oldLogp: a, advantages: a, mask: a }, { pgClip: 0.2, lossAggMode: 'sum' as never }),
      /loss_agg_mode "sum" is not known/,
    );
  });
});

test('entropyBonus aggregates the token entropy with loss_agg_mode', () => {
  tf.tidy(() => {
    const e = t2([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    const m = t2([
      [1, 1, 0],
      [0, 0, 1],
    ]);
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
const V_VALUES = [
  [1, 0.5, 2],
  [0, 3, -2.1],
];
const V_OLD = [
  [0.9, 0.5, 1],
  [0.3, 0, -1.5],
];
const V_RET = [
  [1.5, 0, 1.2],
  [0.1, 9, -2],
];
const V_MASK = [
  [1, 1, 1],
  [1, 0, 1],
];

test("valueLoss: 0.5 x the row mean of the clipped squared error whatever loss_agg_mode, ROLL's critic stats", () => {
  tf.tidy(() => {
    const out = valueLoss({ values: t2(V_VALUES), oldValues: t2(V_OLD), returns: t2(V_RET), mask: t2(V_MASK), valueClip: 0.2 });
    // rows: (0.25 + 0.25 + 0.64)/3 = 0.38 and (0.01 + 0.09)/2 = 0.05; 0.5 x mean = 0.1075 (ROLL CriticWorker.loss_func 0.1075)
    near(out.loss.dataSync()[0], 0.1075, 1e-6);
    const s = out.stats();
    assert.deepEqual(Object.keys(s), Object.keys(VALUE_STATS));
    // ROLL: critic/loss 0.1075, critic/value 0.1, critic/vpred 0.0583333, critic/clipfrac 0.25, critic/error 0.195
    const expected = {
      'critic/loss': 0.1075,
      'critic/value': 0.1,
      'critic/vpred': 0.0583333,
      'critic/clipfrac': 0.25,
      'critic/error': 0.195,
    };
    for (const [k, v] of Object.entries(expected)) near(s[k], v, 1e-6, k);
  });
});

test('valueLoss: no clip (value_clip null) is 0.5 (V - G)^2; gradient follows the winning branch', () => {
  tf.tidy(() => {
    // unclipped rows: 0.38 and (0.01 + 0.01)/2 = 0.01 -> 0.5 x 0.195 = 0.0975 (ROLL 0.0975); without value_clip ROLL logs
    // the squared error under critic/clipfrac (0.195)
    const out = valueLoss({ values: t2(V_VALUES), oldValues: t2(V_OLD), returns: t2(V_RET), mask: t2(V_MASK), valueClip: null });
    near(out.loss.dataSync()[0], 0.0975, 1e-6);
    near(out.stats()['critic/clipfrac'], 0.195, 1e-6);
    // with clip 0.2: d/dV = (V - G) / (2 x rows x row tokens) where the unclipped term wins (or ties), 0 where the clipped
    // (constant) term wins: row 0 (1 - 1.5)/6, 0.5/6, 0.8/6 | row 1 (0 - 0.1)/4, pad 0, clipped 0 (ROLL's gradient too)
    const g = tf
      .grad(
        (v: tf.Tensor) =>
          valueLoss({
            values: v as tf.Tensor2D,
            oldValues: t2(V_OLD),
            returns: t2(V_RET),
            mask: t2(V_MASK),
            valueClip: 0.2,
          }).loss,
      )(t2(V_VALUES))
      .arraySync() as number[][];
    const expected = [
      [-0.0833333, 0.0833333, 0.1333333],
      [-0.025, 0, 0],
    ];
    g.forEach((row, i) => row.forEach((x, t) => near(x, expected[i][t], 1e-6, `grad[${i}][${t}]`)));
    assert.throws(
      () => valueLoss({ values: t2(V_VALUES), oldValues: t2(V_OLD), returns: t2(V_RET), mask: t2(V_MASK), valueClip: 0 }),
      /value_clip must be a positive finite number or null, got 0/,
    );
    assert.throws(
      () => valueLoss({ values: t2(V_VALUES), oldValues: t2([[0]]), returns: t2(V_RET), mask: t2(V_MASK), valueClip: null }),
      /oldValues has shape \[1, 1\] but values has \[2, 3\]/,
    );
  });
});

test('stats() of a loss can be read once (cached) and dispose() frees them unread', () => {
  const before = tf.memory().numTensors;
  const inputs = [t2(V_VALUES), t2(V_OLD), t2(V_RET), t2(V_MASK)];
  const [values, oldValues, returns, mask] = inputs;
  const scope = tf.engine().startScope();
  const read = valueLoss({ values, oldValues, returns, mask, valueClip: 0.2 });
  const first = read.stats();
  assert.equal(read.stats(), first, 'cached');
  const unread = valueLoss({ values, oldValues, returns, mask, valueClip: 0.2 });
  unread.dispose();
  assert.throws(() => unread.stats(), /the stats were disposed before being read/);
  tf.engine().endScope(scope);
  inputs.forEach((t) => t.dispose());
  assert.equal(tf.memory().numTensors, before, 'nothing leaks');
});

/**
 * The micro-batch shares of a minibatch: ppoLoss (+ 0.1 k3 KL loss - 0.01 entropy when `extra`) on rows
 * [k*micro, (k+1)*micro) with the whole minibatch's denominators, summed, and their stats accumulated.
 */
function microBatched(
  inp: { logp: tf.Tensor2D; old: number[][]; adv: number[][]; mask: number[][]; ref?: number[][]; ent?: number[][] },
  mode: LossAggMode,
  micro: number,
  normLength: number,
  stats?: StatAccumulator,
): tf.Scalar {
  const denom = aggDenominators(inp.mask, normLength);
  const B = inp.mask.length;
  let total = tf.scalar(0);
  for (let k = 0; k < B; k += micro) {
    const rows = <T>(m: T[]) => m.slice(k, k + micro);
    const logp = tf.slice(inp.logp, [k, 0], [Math.min(micro, B - k), -1]);
    const mask = t2(rows(inp.mask));
    const pg = ppoLoss(
      { logp, oldLogp: t2(rows(inp.old)), advantages: t2(rows(inp.adv)), mask },
      { pgClip: 0.2, dualClip: true, lossAggMode: mode },
      denom,
    );
    let loss: tf.Scalar = pg.loss;
    if (inp.ref && inp.ent) {
      const kl = klLoss(logp, t2(rows(inp.ref)), mask, mode, denom);
      loss = tf.sub(tf.add(loss, tf.mul(kl, 0.1)), tf.mul(entropyBonus(t2(rows(inp.ent)), mask, mode, denom), 0.01));
      stats?.add({ 'actor/kl_loss': kl.dataSync()[0], 'actor/total_loss': loss.dataSync()[0] });
    }
    if (stats) stats.add(pg.stats(), PPO_STATS);
    else pg.dispose();
    total = tf.add(total, loss);
  }
  return total;
}

test('micro-batches, the smallest case: sequences of 2 and 4 sampled tokens, token loss 1 on the first (ROLL token-mean 1/3)', () => {
  // ratio 1 and A = -1 on the first sequence's tokens make pg = 1 there, 0 on the second. ROLL (the fsdp2 strategy's
  // train_step with the agentic actor loss_func, micro-batches of 1 or 2): token-mean 0.3333333, seq-mean-token-mean 0.5,
  // seq-mean-token-sum 1.0, seq-mean-token-sum-norm 2 / 5 = 0.4 (5 padded slots)
  const mask = [
    [0, 1, 1, 0, 0],
    [1, 1, 1, 1, 0],
  ];
  const zero = [
    [0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0],
  ];
  const adv = [
    [0, -1, -1, 0, 0],
    [0, 0, 0, 0, 0],
  ];
  const roll: Record<LossAggMode, number> = {
    'token-mean': 1 / 3,
    'seq-mean-token-mean': 0.5,
    'seq-mean-token-sum': 1,
    'seq-mean-token-sum-norm': 0.4,
  };
  for (const mode of Object.keys(roll) as LossAggMode[]) {
    for (const micro of [1, 2]) {
      tf.tidy(() =>
        near(
          microBatched({ logp: t2(zero), old: zero, adv, mask }, mode, micro, 5).dataSync()[0],
          roll[mode],
          1e-6,
          `${mode} micro ${micro}`,
        ),
      );
    }
  }
});

// Four sequences, one without sampled tokens; ROLL pads to sequence_length 7 (6 shifted slots, the divisor of
// seq-mean-token-sum-norm). ratio = exp(-OFF): row 0 0.741 (A -1) and 1.284 (A 0.5) are clipped the pessimistic way,
// row 3's 1.492 with A -1.2 meets the dual clip (c = 1.4).
const R_MASK = [
  [0, 1, 1, 1],
  [1, 1, 0, 0],
  [0, 0, 0, 0],
  [1, 1, 1, 1],
];
const R_LOGP = [
  [-1.0, -0.5, -1.2, -0.3],
  [-0.7, -2.0, -0.1, -0.4],
  [-0.2, -0.3, -0.4, -0.5],
  [-1.5, -0.25, -0.8, -1.1],
];
const R_OFF = [
  [0, 0.3, -0.25, 0.05],
  [-0.1, 0.4, 0, 0],
  [0, 0, 0, 0],
  [0.02, -0.4, 0.15, -0.05],
];
const R_OLD = R_LOGP.map((row, i) => row.map((x, t) => (x + R_OFF[i][t]) * R_MASK[i][t]));
const R_REF = [
  [-1.1, -0.6, -1.0, -0.5],
  [-0.5, -1.8, -0.2, -0.3],
  [0, 0, 0, 0],
  [-1.4, -0.5, -0.9, -1.0],
];
const R_ADV = [
  [0, -1.0, 0.5, 2.0],
  [-1.5, 0.8, 0, 0],
  [0, 0, 0, 0],
  [0.3, -1.2, 1.1, -0.7],
];
const R_ENT = [
  [0.9, 1.1, 0.7, 1.3],
  [0.5, 0.8, 0.2, 0.1],
  [1, 1, 1, 1],
  [1.2, 0.6, 0.9, 1.0],
];
/**
 * ROLL's values for these inputs: the fsdp2 strategy's train_step (one minibatch, micro-batches of 1, 2 and 4, which
 * agree to 1e-7) with the agentic actor loss_func (pg_clip 0.2, dual clip, use_kl_loss 0.1, entropy_loss_coef 0.01):
 * the backward loss, d loss / d logp, and the metrics as ActorWorker.train_step reduces them.
 */
const ROLL_ACTOR: Record<LossAggMode, { loss: number; grad: number[][]; metrics: Record<string, number> }> = {
  'token-mean': {
    loss: 0.05847432,
    grad: [
      [0, 0.0010574, -0.00246, -0.2093702],
      [0.1817351, -0.062044, 0, 0],
      [0, 0, 0, 0],
      [-0.0338419, 0.0024578, -0.1041403, 0.080597],
    ],
    metrics: {
      'actor/pg_loss': 0.0660104,
      'actor/clipfrac': 0.2222222,
      'actor/kl_loss': 0.0146396,
      'actor/total_loss': 0.0584743,
      'actor/approxkl': 0.0283556,
      'actor/policykl': -0.0133333,
    },
  },
  'seq-mean-token-mean': {
    loss: 0.08856077,
    grad: [
      [0, 0.0010574, -0.00246, -0.2093702],
      [0.2726027, -0.0930661, 0, 0],
      [0, 0, 0, 0],
      [-0.0253814, 0.0018433, -0.0781052, 0.0604477],
    ],
    metrics: {
      'actor/pg_loss': 0.0956756,
      'actor/clipfrac': 0.2222222,
      'actor/kl_loss': 0.015796,
      'actor/total_loss': 0.0885608,
      'actor/approxkl': 0.0305028,
      'actor/policykl': -0.0377778,
    },
  },
  'seq-mean-token-sum': {
    loss: 0.17542291,
    grad: [
      [0, 0.0031721, -0.0073801, -0.6281106],
      [0.5452054, -0.1861321, 0, 0],
      [0, 0, 0, 0],
      [-0.1015256, 0.0073733, -0.3124208, 0.2417909],
    ],
    metrics: {
      'actor/pg_loss': 0.198031,
      'actor/clipfrac': 0.6666667,
      'actor/kl_loss': 0.0439188,
      'actor/total_loss': 0.1754229,
      'actor/approxkl': 0.0850667,
      'actor/policykl': -0.04,
    },
  },
  'seq-mean-token-sum-norm': {
    loss: 0.08771145,
    grad: [
      [0, 0.001586, -0.00369, -0.3140553],
      [0.2726027, -0.0930661, 0, 0],
      [0, 0, 0, 0],
      [-0.0507628, 0.0036867, -0.1562104, 0.1208954],
    ],
    metrics: {
      'actor/pg_loss': 0.0990155,
      'actor/clipfrac': 0.3333333,
      'actor/kl_loss': 0.0219594,
      'actor/total_loss': 0.0877115,
      'actor/approxkl': 0.0425333,
      'actor/policykl': -0.02,
    },
  },
};
// The same in every mode (ROLL): token-mean / per-sequence stats and the extremes.
const ROLL_ACTOR_COMMON = {
  'actor/ppo_ratio_high_clipfrac': 0.2222222,
  'actor/ppo_ratio_low_clipfrac': 0.2222222,
  'actor/ppo_ratio_clipfrac': 0.4444444,
  'actor/ratio_mean': 0.9919235,
  'actor/ratio_max': 1.4918246,
  'actor/ratio_min': 0.67032,
};

test("the actor loss over micro-batches of 1, 2 and 4 equals ROLL's: loss, gradient and metrics, every loss_agg_mode", () => {
  for (const mode of Object.keys(ROLL_ACTOR) as LossAggMode[]) {
    const roll = ROLL_ACTOR[mode];
    for (const micro of [1, 2, 4]) {
      tf.tidy(() => {
        const stats = new StatAccumulator();
        const inp = { old: R_OLD, adv: R_ADV, mask: R_MASK, ref: R_REF, ent: R_ENT };
        near(
          microBatched({ ...inp, logp: t2(R_LOGP) }, mode, micro, 6, stats).dataSync()[0],
          roll.loss,
          1e-6,
          `${mode} micro ${micro} loss`,
        );
        const g = tf
          .grad((lp: tf.Tensor) => microBatched({ ...inp, logp: lp as tf.Tensor2D }, mode, micro, 6))(t2(R_LOGP))
          .arraySync() as number[][];
        g.forEach((row, i) => row.forEach((x, t) => near(x, roll.grad[i][t], 1e-6, `${mode} micro ${micro} grad[${i}][${t}]`)));
        const m = stats.result(1);
        for (const [k, v] of Object.entries({ ...roll.metrics, ...ROLL_ACTOR_COMMON })) near(m[k], v, 1e-6, `${mode} micro ${micro} ${k}`);
      });
    }
  }
});
