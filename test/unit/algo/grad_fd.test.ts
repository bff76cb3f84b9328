/**
 * Gradients of the full actor loss of a tiny Qwen2 against central finite differences. The loss is
 * docs/numerics.md §6's
 *   total = ppoLoss (clip 0.2 + dual clip, some tokens clipped) + 0.5 * klLoss (k3 vs a perturbed reference)
 *           - 0.1 * entropyBonus,      all aggregated with seq-mean-token-mean,
 * computed in float32 on the wasm backend (the training backend).
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { entropyBonus, klLoss, ppoLoss } from '../../../src/algo/loss';
import { validateQwen2Config } from '../../../src/model/config';
import { tokenLogProbs } from '../../../src/model/logprobs';
import { Qwen2 } from '../../../src/model/qwen2';
import { initTestBackend } from '../../helpers/backend';

// Tolerance, |fd - g| <= 1e-2 |g| + 1.5e-4, with one central difference at eps = 3e-3 on the weight:
// - rounding: the loss (about -0.25) is float32, so L(w + eps) - L(w - eps) carries a few ulps (~2e-7) of noise
//   from thousands of accumulated ops; divided by 2 eps that is a few 1e-5 in the difference quotient.
// - truncation: eps^2/6 * f''' grows with eps; the tied embedding (weights ~0.02, |g| up to 2) is the most curved
//   coordinate: at eps = 1e-2 it was 2.5% off, at 3e-3 0.4%, while at 1e-3 the rounding noise reached 1e-4.
// Measured over 20 random inits (seeds 1..20, every weight's largest-|g| coordinate): worst relative error 4.1e-3
// where |g| >= 1e-2 and worst absolute error 5.6e-5 where |g| < 1e-2 on wasm (2.6e-3 and 5.4e-5 on the pure-JS cpu
// backend, also float32, so wasm is used). The tolerance leaves 2.5x margin on both; a wrong gradient (a sign, a
// missing term or factor, a clipped token that still passes gradient) is off by far more on the large-|g|
// coordinates, of which the test asserts there are at least 12.
const EPS = 3e-3;
const RTOL = 1e-2;
const ATOL = 1.5e-4;

test('actor loss gradients of a tiny Qwen2 match central finite differences', async () => {
  await initTestBackend();
  const cfg = validateQwen2Config({
    model_type: 'qwen2',
    vocab_size: 13,
    hidden_size: 16,
    intermediate_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    max_position_embeddings: 64,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
  });
  const model = Qwen2.random(cfg, 5);
  const vars = model.trainableVariables();
  // row 1 is right-padded; the shifted response mask skips the first (prompt) target and the padding
  const ids = tf.tensor2d(
    [
      [1, 4, 7, 2, 9, 3],
      [5, 8, 2, 11, 0, 0],
    ],
    undefined,
    'int32',
  );
  const attention = tf.tensor2d(
    [
      [1, 1, 1, 1, 1, 1],
      [1, 1, 1, 1, 0, 0],
    ],
    undefined,
    'float32',
  );
  const mask = [
    [0, 1, 1, 1, 1],
    [0, 1, 1, 0, 0],
  ];
  const logp0 = tf.tidy(() => tokenLogProbs(model, ids, attention).logp.arraySync());
  // old = logp0 + offset, so ratio = exp(-offset) at the evaluation point:
  //   (0,1) 0.741 with A -1: clipped low (gradient 0); (0,2) 1.350 with A 1: clipped high (0);
  //   (1,1) 1.492 with A -1: pg = 1.492 > c = 1 + 2*0.2 = 1.4, the dual clip holds it at 1.4 (0); others unclipped.
  const offset = [
    [0, 0.3, -0.3, 0.05, 0],
    [0, -0.4, 0.02, 0, 0],
  ];
  const advantages = [
    [0, -1, 1, 0.5, -2],
    [0, -1, 2, 0, 0],
  ];
  const refOffset = [
    [0, 0.2, -0.1, 0.15, -0.05],
    [0, 0.1, -0.2, 0, 0],
  ];
  const oldLogp = logp0.map((row, i) => row.map((x, t) => x + offset[i][t]));
  const refLogp = logp0.map((row, i) => row.map((x, t) => x + refOffset[i][t]));
  let pgStats: Record<string, number> = {};
  const loss = (): tf.Scalar => {
    const { logp, entropy } = tokenLogProbs(model, ids, attention);
    const m = tf.tensor2d(mask);
    const pg = ppoLoss(
      { logp, oldLogp: tf.tensor2d(oldLogp), advantages: tf.tensor2d(advantages), mask: m },
      { pgClip: 0.2, dualClip: true, lossAggMode: 'seq-mean-token-mean' },
    );
    pgStats = pg.stats();
    const kl = klLoss(logp, tf.tensor2d(refLogp), m, 'seq-mean-token-mean');
    return tf.sub(tf.add(pg.loss, tf.mul(kl, 0.5)), tf.mul(entropyBonus(entropy, m, 'seq-mean-token-mean'), 0.1)) as tf.Scalar;
  };
  const names = [...vars.keys()];
  const { value, grads } = tf.variableGrads(
    loss,
    names.map((n) => vars.get(n) as tf.Variable),
  );
  value.dispose();
  // the clip is really active: 1 of 6 masked tokens below 0.8, 2 above 1.2
  assert.ok(
    Math.abs(pgStats['actor/ppo_ratio_low_clipfrac'] - 1 / 6) < 1e-6 && Math.abs(pgStats['actor/ppo_ratio_high_clipfrac'] - 2 / 6) < 1e-6,
    JSON.stringify(pgStats),
  );

  const lossAt = (v: tf.Variable, base: Float32Array, k: number, d: number): number => {
    const w = base.slice();
    w[k] += d;
    tf.tidy(() => v.assign(tf.tensor(w, v.shape)));
    return tf.tidy(() => loss().dataSync()[0]);
  };
  let checked = 0;
  let large = 0;
  for (const name of names) {
    const v = vars.get(name) as tf.Variable;
    const g = grads[v.name].dataSync();
    let k = 0; // the coordinate with the largest |gradient| of this weight
    g.forEach((x, i) => {
      if (Math.abs(x) > Math.abs(g[k])) k = i;
    });
    const base = v.dataSync().slice() as Float32Array;
    const fd = (lossAt(v, base, k, EPS) - lossAt(v, base, k, -EPS)) / (2 * EPS);
    tf.tidy(() => v.assign(tf.tensor(base, v.shape)));
    assert.ok(Math.abs(fd - g[k]) <= RTOL * Math.abs(g[k]) + ATOL, `${name}[${k}]: autodiff ${g[k]} vs finite difference ${fd}`);
    checked++;
    if (Math.abs(g[k]) >= 1e-2) large++;
  }
  assert.equal(checked, 26); // embed + 12 per layer x 2 + final norm (tied lm_head)
  assert.ok(large >= 12, `only ${large} coordinates with |g| >= 1e-2`);
  Object.values(grads).forEach((t) => t.dispose());
  ids.dispose();
  attention.dispose();
  model.dispose();
});
