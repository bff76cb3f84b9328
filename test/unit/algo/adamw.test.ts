import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { AdamW, clipByGlobalNorm } from '../../../src/algo/adamw';
import { decodeSafetensors, encodeSafetensors } from '../../../src/model/hf/safetensors';
import { momentsOf } from '../../helpers/adamw_moments';
import { initTestBackend } from '../../helpers/backend';

test('AdamW steps match a hand-computed update on a 2-element tensor', async () => {
  await initTestBackend();
  const w = tf.variable(tf.tensor1d([1, -2]));
  const params = new Map([['w', w]]);
  const opt = new AdamW({ betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.1, params });
  const lr = 0.01;
  // Step 1: g = [0.5, -1]. m = 0.1g, v = 0.001 g^2, mhat = g, vhat = g^2 -> update = lr * g/(|g| + eps) = lr*sign(g).
  const g1 = tf.tensor1d([0.5, -1]);
  opt.applyGradients(new Map([['w', g1]]), lr);
  const exp1 = [1 * (1 - lr * 0.1) - lr * (0.5 / (0.5 + 1e-8)), -2 * (1 - lr * 0.1) + lr * (1 / (1 + 1e-8))];
  const got1 = Array.from(w.dataSync());
  exp1.forEach((e, i) => assert.ok(Math.abs(got1[i] - e) < 1e-6, `${got1[i]} vs ${e}`));
  // Step 2: g = [0.1, 0.2], by hand.
  const g2 = [0.1, 0.2];
  opt.applyGradients({ w: tf.tensor1d(g2) }, lr);
  const ga = [0.5, -1];
  const got2 = Array.from(w.dataSync());
  for (let i = 0; i < 2; i++) {
    const m = 0.9 * (0.1 * ga[i]) + 0.1 * g2[i];
    const v = 0.999 * (0.001 * ga[i] ** 2) + 0.001 * g2[i] ** 2;
    const mhat = m / (1 - 0.9 ** 2);
    const denom = Math.sqrt(v) / Math.sqrt(1 - 0.999 ** 2) + 1e-8;
    const e = exp1[i] * (1 - lr * 0.1) - lr * (mhat / denom);
    assert.ok(Math.abs(got2[i] - e) < 1e-6, `${got2[i]} vs ${e}`);
  }
  assert.equal(opt.stepCount, 2);
  // State round trip through safetensors continues identically.
  const bytes = await opt.toSafetensors();
  const opt2 = AdamW.fromSafetensors(bytes, { params });
  assert.equal(opt2.stepCount, 2);
  assert.deepEqual((await momentsOf(opt2)).get('w'), (await momentsOf(opt)).get('w'));
  assert.equal(opt2.weightDecay, 0.1);
  opt.dispose();
  opt2.dispose();
  w.dispose();
});

test('AdamW equals torch.optim.AdamW over three steps, a decayed weight and a norm weight without decay', async () => {
  await initTestBackend();
  const f = JSON.parse(readFileSync('test/fixtures/hf/adamw_steps.json', 'utf8')) as {
    lr: number;
    betas: [number, number];
    eps: number;
    weightDecay: number;
    params: Record<string, { shape: number[]; values: number[] }>;
    grads: Array<Record<string, number[]>>;
    after: Array<Record<string, number[]>>;
  };
  const params = new Map(Object.entries(f.params).map(([name, p]) => [name, tf.variable(tf.tensor(p.values, p.shape))]));
  const opt = new AdamW({ betas: f.betas, eps: f.eps, weightDecay: f.weightDecay, params });
  f.grads.forEach((step, k) => {
    const grads = new Map(Object.entries(step).map(([name, g]) => [name, tf.tensor(g, f.params[name].shape)]));
    opt.applyGradients(grads, f.lr);
    for (const [name, p] of params) {
      const got = p.dataSync();
      f.after[k][name].forEach((want, i) =>
        assert.ok(
          Math.abs(got[i] - want) <= 1e-6 * Math.max(1, Math.abs(want)),
          `step ${k + 1}, ${name}[${i}]: ${got[i]} vs torch ${want}`,
        ),
      );
    }
    tf.dispose([...grads.values()]);
  });
  opt.dispose();
  for (const p of params.values()) p.dispose();
});

test('biases and norm weights get no decay by default; missing params throw', async () => {
  await initTestBackend();
  const b = tf.variable(tf.tensor1d([1]));
  const opt = new AdamW({ weightDecay: 0.5 });
  opt.applyGradients(new Map([['x.bias', tf.tensor1d([0])]]), 0.1, new Map([['x.bias', b]]));
  assert.equal(b.dataSync()[0], 1);
  assert.throws(() => opt.applyGradients(new Map([['y', tf.tensor1d([0])]]), 0.1), /no parameters/);
  assert.throws(() => new AdamW({ betas: [1, 0.9] }), /betas\[0\] = 1/);
});

test('clipByGlobalNorm returns the pre-clip norm and scales; non-finite is reported, not applied', async () => {
  await initTestBackend();
  const a = tf.tensor1d([3, 0]);
  const b = tf.tensor1d([4]);
  const { norm, scale } = clipByGlobalNorm(
    new Map([
      ['a', a],
      ['b', b],
    ]),
    1,
  );
  assert.ok(Math.abs(norm - 5) < 1e-6);
  assert.ok(Math.abs(scale - 1 / (5 + 1e-6)) < 1e-12);
  assert.equal(clipByGlobalNorm({ a: new Float32Array([3, 0]) }, 10).scale, 1);
  const bad = clipByGlobalNorm({ a: tf.tensor1d([NaN]) }, 1);
  assert.ok(!Number.isFinite(bad.norm));
  assert.equal(bad.scale, 1);
  assert.throws(() => clipByGlobalNorm({ a }, 0), /maxNorm = 0/);
});

test('AdamW, betas (0.8, 0.99), weight_decay 0.1, lr 0.1: two steps written out by hand', async () => {
  await initTestBackend();
  const w = tf.variable(tf.tensor1d([2, -1, 0.5]));
  const b = tf.variable(tf.tensor1d([1]));
  const params = new Map([
    ['w', w],
    ['x.bias', b],
  ]);
  const opt = new AdamW({ betas: [0.8, 0.99], eps: 1e-8, weightDecay: 0.1, params });
  // Step 1, g = [0.4, -0.2, 0]: decay w * (1 - 0.1 * 0.1) = [1.98, -0.99, 0.495]; m = 0.2 g = [0.08, -0.04, 0],
  // v = 0.01 g^2 = [0.0016, 0.0004, 0]; mhat = m / 0.2 = g, sqrt(vhat) = sqrt(v / 0.01) = |g| -> step 0.1 * sign(g)
  // -> w = [1.88, -0.89, 0.495]. The bias is not decayed: 1 - 0.1 * 0.5 / 0.5 = 0.9.
  opt.applyGradients({ w: tf.tensor1d([0.4, -0.2, 0]), 'x.bias': tf.tensor1d([0.5]) }, 0.1);
  Array.from(w.dataSync()).forEach((x, i) => assert.ok(Math.abs(x - [1.88, -0.89, 0.495][i]) < 1e-6, `step 1 w[${i}] ${x}`));
  assert.ok(Math.abs(b.dataSync()[0] - 0.9) < 1e-6);
  // Step 2, g = [0.1, 0.2, 0.3]: m = 0.8 m + 0.2 g = [0.084, 0.008, 0.06]; v = 0.99 v + 0.01 g^2 = [0.001684, 0.000796, 0.0009];
  // mhat = m / (1 - 0.64) = [0.2333333, 0.0222222, 0.1666667]; sqrt(v / (1 - 0.9801)) = [0.2909005, 0.2, 0.2126644];
  // w = 0.99 w - 0.1 mhat / denom = [1.8612 - 0.0802107, -0.8811 - 0.0111111, 0.49005 - 0.0783707]
  opt.applyGradients({ w: tf.tensor1d([0.1, 0.2, 0.3]), 'x.bias': tf.tensor1d([0]) }, 0.1);
  Array.from(w.dataSync()).forEach((x, i) => assert.ok(Math.abs(x - [1.7809893, -0.8922111, 0.4116793][i]) < 1e-6, `step 2 w[${i}] ${x}`));
  opt.dispose();
  w.dispose();
  b.dispose();
});

test('AdamW: gradScale (the clip) equals stepping on gradients scaled beforehand; a checkpoint missing a moment is refused', async () => {
  await initTestBackend();
  const start = [0.5, -1.5, 2];
  const g = [0.3, -0.2, 0.7];
  const scaled = new Map([['w', tf.variable(tf.tensor1d(start))]]);
  const prescaled = new Map([['w', tf.variable(tf.tensor1d(start))]]);
  const a = new AdamW({ weightDecay: 0.1, params: scaled });
  const b = new AdamW({ weightDecay: 0.1, params: prescaled });
  for (let k = 0; k < 2; k++) {
    a.applyGradients({ w: new Float32Array(g) }, 0.01, undefined, 0.25);
    b.applyGradients({ w: new Float32Array(g.map((x) => Math.fround(x * 0.25))) }, 0.01);
  }
  const got = scaled.get('w')!.dataSync();
  prescaled
    .get('w')!
    .dataSync()
    .forEach((x, i) => assert.ok(Math.abs(got[i] - x) <= 1e-7, `w[${i}] ${got[i]} vs ${x}`));
  const bytes = await a.toSafetensors();
  const { tensors, metadata } = decodeSafetensors(bytes);
  const withoutV = encodeSafetensors({ 'm.w': tensors['m.w'] }, metadata);
  assert.throws(() => AdamW.fromSafetensors(withoutV), /v\.w is missing/);
});

/** torch's clip_grad_norm_ + AdamW over five steps (test/fixtures/hf/adamw_clip_fixtures.py). */
interface ClipFixture {
  betas: [number, number];
  eps: number;
  weightDecay: number;
  maxNorm: number;
  decay: string[];
  clippedStep: number;
  init: Record<string, { shape: number[]; values: number[] }>;
  steps: Array<{
    lr: number;
    norm: number;
    grads: Record<string, number[]>;
    params: Record<string, number[]>;
    m: Record<string, number[]>;
    v: Record<string, number[]>;
  }>;
}

/**
 * got within 1e-6 of want, relative to each value, or with `normwise` to the largest |want| of the tensor. m is a
 * sum of terms of opposite signs that can cancel to a value far smaller than the terms, and there one rounding
 * of a term moves it by more than 1e-6 of itself: at step 2 of this fixture torch's m (its lerp_ fuses the
 * multiply-add) is 1e-6 from the exact value of its own float32 inputs, ours 1e-7. The weights, what AdamW is
 * for, and v (a sum of squares) are checked value by value.
 */
function assertRelative(got: ArrayLike<number>, want: number[], what: string, normwise = false): void {
  assert.equal(got.length, want.length, `${what}: length`);
  const scale = Math.max(...want.map(Math.abs));
  want.forEach((w, i) =>
    assert.ok(Math.abs(got[i] - w) <= 1e-6 * (normwise ? scale : Math.abs(w)), `${what}[${i}]: ${got[i]} vs torch ${w}`),
  );
}

test('clip and AdamW equal torch over five steps (decay and no-decay groups, a changing lr, one clipped step), also across a checkpoint', async () => {
  await initTestBackend();
  const f = JSON.parse(readFileSync('test/fixtures/hf/adamw_clip_steps.json', 'utf8')) as ClipFixture;
  const params = new Map(Object.entries(f.init).map(([name, p]) => [name, tf.variable(tf.tensor(p.values, p.shape))]));
  // The fixture's groups are the default rule's: the matrix decays, the bias and the norm weight do not.
  assert.deepEqual(
    [...params.keys()].filter((n) => !['.bias', 'norm.weight'].some((s) => n.endsWith(s))),
    f.decay,
  );
  let opt = new AdamW({ betas: f.betas, eps: f.eps, weightDecay: f.weightDecay, params });
  for (const [k, step] of f.steps.entries()) {
    if (k === 3) {
      // Resume from optimizer.safetensors bytes midway: torch's numbers must go on.
      const bytes = await opt.toSafetensors();
      opt.dispose();
      opt = AdamW.fromSafetensors(bytes, { params });
      assert.deepEqual(await opt.toSafetensors(), bytes, 'the loaded state writes the same bytes');
    }
    const grads = new Map(Object.entries(step.grads).map(([name, g]) => [name, tf.tensor(g, f.init[name].shape)]));
    const { norm, scale } = clipByGlobalNorm(grads, f.maxNorm);
    assertRelative([norm], [step.norm], `step ${k + 1} norm`);
    assert.equal(scale < 1, k === f.clippedStep, `step ${k + 1} is clipped: scale ${scale}`);
    opt.applyGradients(grads, step.lr, undefined, scale);
    const moments = await momentsOf(opt);
    for (const [name, p] of params) {
      assertRelative(p.dataSync(), step.params[name], `step ${k + 1} ${name}`);
      assertRelative(moments.get(name)!.m, step.m[name], `step ${k + 1} m.${name}`, true);
      assertRelative(moments.get(name)!.v, step.v[name], `step ${k + 1} v.${name}`);
    }
    tf.dispose([...grads.values()]);
  }
  assert.equal(opt.stepCount, 5);
  opt.dispose();
  for (const p of params.values()) p.dispose();
});
