import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { countParams, tinyPreset, validateQwen2Config } from '../../../src/model/config';
import { modelFromSafetensors, modelToSafetensors } from '../../../src/model/hf/weights';
import { bmm, linear } from '../../../src/model/kernels';
import { tokenLogProbs } from '../../../src/model/logprobs';
import { Qwen2, rmsNorm } from '../../../src/model/qwen2';
import { applyRope, ropeCosSin } from '../../../src/model/rope';
import { initTestBackend } from '../../helpers/backend';

before(async () => {
  await initTestBackend();
});

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number, what = ''): void => {
  assert.equal(a.length, b.length, `${what} length`);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
};

test('config validation errors name the field; tiny has 105,344 params', () => {
  assert.equal(countParams(tinyPreset(101)), 105344);
  assert.throws(() => validateQwen2Config({ ...tinyPreset(101), model_type: 'qwen3' }), /model_type = "qwen3"/);
  assert.throws(() => validateQwen2Config({ ...tinyPreset(101), num_key_value_heads: 3 }), /num_key_value_heads = 3/);
  assert.throws(() => validateQwen2Config({ ...tinyPreset(101), hidden_size: -1 }), /hidden_size = -1/);
});

test('RMSNorm matches hand-computed values', () => {
  const y = rmsNorm(tf.tensor2d([[3, 4]]), tf.tensor1d([1, 2]), 0);
  // rms = sqrt((9+16)/2) = 3.5355; y = [3/3.5355, 2*4/3.5355]
  close(y.dataSync(), [0.8485281, 2.2627417], 1e-5);
});

test('RoPE matches hand-computed rotation (D=4, theta=10000)', () => {
  // position 1, D=4: inv_freq = [1, 0.01]; pairs (x0,x2) rotate by 1 rad, (x1,x3) by 0.01 rad.
  const { cos, sin } = ropeCosSin([1], 1, 1, 4, 10000);
  const y = applyRope(tf.tensor4d([1, 2, 3, 4], [1, 1, 1, 4]), cos, sin).dataSync();
  const c1 = Math.cos(1),
    s1 = Math.sin(1),
    c2 = Math.cos(0.01),
    s2 = Math.sin(0.01);
  close(y, [1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + 1 * s1, 4 * c2 + 2 * s2], 1e-5);
  // position 0 is the identity
  const z = ropeCosSin([0], 1, 1, 4, 10000);
  close(applyRope(tf.tensor4d([1, 2, 3, 4], [1, 1, 1, 4]), z.cos, z.sin).dataSync(), [1, 2, 3, 4], 1e-7);
});

test('bmm and linear: values and gradients equal tf.matMul (wasm XNNPACK path)', () => {
  // [2,64,48] @ [2,48,64]: forward and both gradient products have >= 2048 outputs per slice (StarpoBmm path).
  const a = tf.randomNormal([2, 64, 48], 0, 1, 'float32', 1) as tf.Tensor3D;
  const b = tf.randomNormal([2, 48, 64], 0, 1, 'float32', 2) as tf.Tensor3D;
  const w = tf.randomNormal([2, 64, 64], 0, 1, 'float32', 3);
  close(bmm(a, b).dataSync(), tf.matMul(a, b).dataSync(), 1e-4, 'bmm');
  const g1 = tf.grads((x, y) => tf.sum(tf.mul(bmm(x as tf.Tensor3D, y as tf.Tensor3D), w)))([a, b]);
  const g2 = tf.grads((x, y) => tf.sum(tf.mul(tf.matMul(x, y), w)))([a, b]);
  close(g1[0].dataSync(), g2[0].dataSync(), 1e-3, 'da');
  close(g1[1].dataSync(), g2[1].dataSync(), 1e-3, 'db');
  const x = tf.randomNormal([50, 8], 0, 1, 'float32', 4) as tf.Tensor2D;
  const W = tf.randomNormal([6, 8], 0, 1, 'float32', 5) as tf.Tensor2D;
  const bias = tf.randomNormal([6], 0, 1, 'float32', 6) as tf.Tensor1D;
  const u = tf.randomNormal([50, 6], 0, 1, 'float32', 7);
  close(linear(x, W, bias).dataSync(), tf.add(tf.matMul(x, W, false, true), bias).dataSync(), 1e-4, 'linear');
  const h1 = tf.grads((p, q) => tf.sum(tf.mul(linear(p as tf.Tensor2D, q as tf.Tensor2D), u)))([x, W]);
  const h2 = tf.grads((p, q) => tf.sum(tf.mul(tf.matMul(p, q, false, true), u)))([x, W]);
  close(h1[0].dataSync(), h2[0].dataSync(), 1e-3, 'dx');
  close(h1[1].dataSync(), h2[1].dataSync(), 1e-3, 'dW');
});

function ids2d(rows: number[][], L: number): { ids: tf.Tensor2D; mask: tf.Tensor2D } {
  const ids = rows.map((r) => [...r, ...new Array(L - r.length).fill(0)]);
  const mask = rows.map((r) => [...new Array(r.length).fill(1), ...new Array(L - r.length).fill(0)]);
  return { ids: tf.tensor2d(ids, [rows.length, L], 'int32'), mask: tf.tensor2d(mask, [rows.length, L], 'float32') };
}

test('causal: changing a later token does not change earlier logits', () => {
  const m = Qwen2.random(tinyPreset(101), 7);
  const a = ids2d([[1, 10, 20, 30, 40, 50]], 6);
  const b = ids2d([[1, 10, 20, 30, 99, 77]], 6);
  const la = m.forward(a.ids, a.mask).arraySync()[0];
  const lb = m.forward(b.ids, b.mask).arraySync()[0];
  for (let t = 0; t < 4; t++) close(la[t], lb[t], 1e-5, `pos ${t}`);
  assert.ok(Math.abs(la[4][0] - lb[4][0]) + Math.abs(la[5][3] - lb[5][3]) > 1e-6);
  m.dispose();
});

test('padding invariance: logits of a row do not depend on right padding or on other rows', () => {
  const m = Qwen2.random(tinyPreset(101), 8);
  const row = [1, 5, 9, 13, 17];
  const alone = ids2d([row], 5);
  const la = m.forward(alone.ids, alone.mask).arraySync()[0];
  const batch = ids2d([[1, 2, 3, 4, 5, 6, 7, 8, 9], row, [4]], 9);
  const lb = m.forward(batch.ids, batch.mask).arraySync()[1];
  for (let t = 0; t < row.length; t++) close(la[t], lb[t], 1e-4, `pos ${t}`);
  m.dispose();
});

test('gradients exist and are finite for every variable on wasm', () => {
  const m = Qwen2.random({ ...tinyPreset(101), tie_word_embeddings: false }, 9);
  const vars = m.trainableVariables();
  const { ids, mask } = ids2d(
    [
      [1, 5, 9, 13, 17, 2],
      [1, 7, 2],
    ],
    6,
  );
  const { value, grads } = tf.variableGrads(() => {
    const { logp, entropy } = tokenLogProbs(m, ids, mask);
    return tf.sub(tf.neg(tf.mean(logp)), tf.mul(0.01, tf.mean(entropy))) as tf.Scalar;
  }, [...vars.values()]);
  assert.ok(Number.isFinite(value.dataSync()[0]));
  for (const [name, v] of vars) {
    const g = grads[v.name];
    assert.ok(g, `gradient for ${name}`);
    assert.deepEqual(g.shape, v.shape);
    const d = g.dataSync();
    assert.ok(d.every(Number.isFinite), `finite gradient for ${name}`);
    if (!name.endsWith('.bias') || name.includes('q_proj') || name.includes('v_proj')) {
      assert.ok(
        d.some((x) => x !== 0),
        `non-zero gradient for ${name}`,
      );
    }
  }
  m.dispose();
});

test('tokenLogProbs: shifted log-probs match log_softmax by hand, entropy >= 0', () => {
  const m = Qwen2.random(tinyPreset(101), 10);
  const { ids, mask } = ids2d([[1, 40, 41, 42]], 4);
  const logits = m.forward(ids, mask).arraySync()[0];
  const { logp, entropy } = tokenLogProbs(m, ids, mask);
  assert.deepEqual(logp.shape, [1, 3]);
  const lp = logp.dataSync();
  [40, 41, 42].forEach((tok, t) => {
    const row = logits[t];
    const mx = Math.max(...row);
    const lse = mx + Math.log(row.reduce((s, x) => s + Math.exp(x - mx), 0));
    assert.ok(Math.abs(lp[t] - (row[tok] - lse)) < 1e-5);
  });
  assert.ok(entropy.dataSync().every((e) => e >= 0 && e <= Math.log(101) + 1e-4));
  m.dispose();
});

test('safetensors model round trip gives identical logits; random init is deterministic', async () => {
  const cfg = tinyPreset(101);
  const m = Qwen2.random(cfg, 11);
  const m2 = modelFromSafetensors(cfg, await modelToSafetensors(m));
  const m3 = Qwen2.random(cfg, 11);
  const { ids, mask } = ids2d([[1, 2, 3]], 3);
  const l1 = m.forward(ids, mask).dataSync();
  close(m2.forward(ids, mask).dataSync(), l1, 0, 'reloaded');
  close(m3.forward(ids, mask).dataSync(), l1, 0, 'same seed');
  assert.throws(() => Qwen2.fromNamedTensors(cfg, new Map()), /model.embed_tokens.weight is missing/);
  [m, m2, m3].forEach((x) => x.dispose());
});

test('a disposed model leaves no tensor behind, however it was made (a worker loads one per checkpoint)', async () => {
  const cfg = tinyPreset(101);
  const source = Qwen2.random(cfg, 3);
  const saved = await modelToSafetensors(source);
  source.dispose();
  const before = tf.memory().numTensors;
  for (let i = 0; i < 3; i++) {
    Qwen2.random(cfg, i).dispose();
    modelFromSafetensors(cfg, saved).dispose();
  }
  assert.equal(tf.memory().numTensors, before);
});

test('overfit: a few AdamW steps on one fixed string drive the loss down', async () => {
  const { AdamW } = await import('../../../src/algo/adamw');
  const { charTokenizer } = await import('../../../src/model/tokenizer');
  const tok = charTokenizer();
  const m = Qwen2.random(tinyPreset(tok.vocabSize), 12);
  const vars = m.trainableVariables();
  const opt = new AdamW({ weightDecay: 0, params: vars });
  const seq = tok.encode('<|im_start|>assistant\n<answer>Left</answer><|im_end|>');
  const { ids, mask } = ids2d([seq], seq.length);
  const losses: number[] = [];
  for (let step = 0; step < 40; step++) {
    const { value, grads } = tf.variableGrads(() => tf.neg(tf.mean(tokenLogProbs(m, ids, mask).logp)) as tf.Scalar, [...vars.values()]);
    losses.push(value.dataSync()[0]);
    const byName = new Map([...vars].map(([n, v]) => [n, grads[v.name]]));
    opt.applyGradients(byName, 1e-2);
    tf.dispose([value, ...Object.values(grads)]);
  }
  assert.ok(losses[losses.length - 1] < 0.5 * losses[0], `loss ${losses[0]} -> ${losses[losses.length - 1]}`);
  opt.dispose();
  m.dispose();
});
