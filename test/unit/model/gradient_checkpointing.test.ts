/**
 * Gradient checkpointing per decoder layer (src/model/checkpoint.ts through Qwen2's training forwards): the same loss
 * and the same gradient of every weight as the plain tape, on tiny random Qwen2 and Llama models over a padded batch;
 * less kept for the backward pass; nothing leaked; and the per-layer scopes of a forward without a tape (generation's
 * prefill, the no-gradient pass) still free each layer's intermediates.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { type Qwen2Config, tinyPreset } from '../../../src/model/config';
import { tokenLogProbs } from '../../../src/model/logprobs';
import { Qwen2 } from '../../../src/model/qwen2';
import { initTestBackend } from '../../helpers/backend';
import { relDiff } from '../../helpers/tensor_diff';

before(async () => {
  await initTestBackend();
});

/** Three rows of different lengths, right-padded with id 0: ids int32 [3, 12] and the 0/1 attention mask. */
function paddedBatch(): { ids: tf.Tensor2D; mask: tf.Tensor2D; at: tf.Tensor2D } {
  const lengths = [12, 7, 4];
  const rows = lengths.map((n, b) => Array.from({ length: 12 }, (_, t) => (t < n ? 1 + ((t * 7 + b * 13) % 90) : 0)));
  const mask = rows.map((r, b) => r.map((_, t) => (t < lengths[b] ? 1 : 0)));
  // The shifted response mask: the second half of each row's real tokens.
  const at = rows.map((_, b) => Array.from({ length: 11 }, (_, t) => (t + 1 < lengths[b] && t + 1 >= lengths[b] / 2 ? 1 : 0)));
  return { ids: tf.tensor2d(rows, [3, 12], 'int32'), mask: tf.tensor2d(mask, [3, 12]), at: tf.tensor2d(at, [3, 11]) };
}

/** A PPO-like masked loss of log-probs and entropies, with and without `at`, so both vocabulary paths are crossed. */
function loss(m: Qwen2, ids: tf.Tensor2D, mask: tf.Tensor2D, at: tf.Tensor2D, checkpoint: boolean): () => tf.Scalar {
  return () => {
    const some = tokenLogProbs(m, ids, mask, { at, gradientCheckpointing: checkpoint });
    const all = tokenLogProbs(m, ids, mask, { gradientCheckpointing: checkpoint });
    const pg = tf.sum(tf.mul(tf.sub(tf.mul(some.logp, 0.7), tf.mul(some.entropy, 0.05)), at));
    return tf.add(pg, tf.mul(tf.sum(tf.mul(all.logp, tf.slice(mask, [0, 1], [3, 11]))), 0.01)) as tf.Scalar;
  };
}

const models: Array<[string, Qwen2Config]> = [
  ['Qwen2, 3 layers, tied embeddings', tinyPreset(101, { num_hidden_layers: 3 })],
  ['Llama, 2 layers, untied lm_head', { ...tinyPreset(101), model_type: 'llama', attention_bias: false, tie_word_embeddings: false }],
];

for (const [name, cfg] of models) {
  test(`checkpointing on and off: the same loss and the same gradient of every weight (${name}, padded batch)`, (t) => {
    const m = Qwen2.random(cfg, 5);
    const { ids, mask, at } = paddedBatch();
    const vars = [...m.trainableVariables().values()];
    m.forward(ids, mask).dispose(); // the model's kept weight transposes (wasm) are made once, before counting
    const before = tf.memory().numTensors;
    const off = tf.variableGrads(loss(m, ids, mask, at, false), vars);
    const on = tf.variableGrads(loss(m, ids, mask, at, true), vars);
    assert.equal(Object.keys(on.grads).length, vars.length, 'a gradient for every weight');
    const lossDiff = relDiff(on.value, off.value);
    let worst = 0;
    for (const v of vars) {
      const d = relDiff(on.grads[v.name], off.grads[v.name]);
      assert.ok(d <= 1e-5, `${v.name}: gradients differ by ${d} of the largest entry`);
      worst = Math.max(worst, d);
    }
    assert.ok(lossDiff <= 1e-6, `loss differs by ${lossDiff}`);
    t.diagnostic(`${tf.getBackend()}: loss rel. diff ${lossDiff}, largest gradient rel. diff ${worst}`);
    tf.dispose([on.value, off.value, ...Object.values(on.grads), ...Object.values(off.grads)]);
    assert.equal(tf.memory().numTensors, before, 'no tensor leaked by either backward pass');
    tf.dispose([ids, mask, at]);
    m.dispose();
  });
}

test('checkpointing: the value head path (hiddenStates) gets the same gradients, and without a tape the same forward', (t) => {
  const m = Qwen2.random(tinyPreset(101, { num_hidden_layers: 3 }), 6);
  const { ids, mask, at } = paddedBatch();
  const vars = [...m.trainableVariables().values()];
  const weights = tf.randomNormal([1, 1, 64], 0, 1, 'float32', 3);
  const f = (checkpoint: boolean) => () =>
    tf.sum(tf.mul(m.hiddenStates(ids, mask, { gradientCheckpointing: checkpoint }), weights)) as tf.Scalar;
  const off = tf.variableGrads(f(false), vars);
  const on = tf.variableGrads(f(true), vars);
  let worst = 0;
  for (const v of vars.filter((x) => off.grads[x.name])) worst = Math.max(worst, relDiff(on.grads[v.name], off.grads[v.name]));
  assert.ok(worst <= 1e-5, `largest gradient rel. diff ${worst}`);
  const plain = m.forward(ids, mask);
  const recomputable = m.forward(ids, mask, { gradientCheckpointing: true });
  assert.deepEqual(recomputable.dataSync(), plain.dataSync(), 'no tape: the checkpointed forward is the plain one');
  t.diagnostic(`${tf.getBackend()}: hidden-state gradients rel. diff ${worst}`);
  tf.dispose([weights, plain, recomputable, on.value, off.value, ...Object.values(on.grads), ...Object.values(off.grads)]);
  tf.dispose([ids, mask, at]);
  m.dispose();
});

/** Peak bytes the engine held above what it held before, while `f` ran. */
async function peakExtraBytes(f: () => void): Promise<number> {
  const start = tf.memory().numBytes;
  const info = await tf.profile(f);
  return info.peakBytes - start;
}

test('checkpointing keeps less for the backward pass: the peak of a forward + backward of 4 layers drops', async (t) => {
  const m = Qwen2.random(tinyPreset(101, { num_hidden_layers: 4 }), 7);
  // 4 rows: enough tokens that the layers' activations, not the weights' gradients, make the peak without checkpointing
  // (off wasm each layer keeps only what its backward needs, lean_layer.ts).
  const [B, L] = [4, 96];
  const ids = tf.tensor2d(
    Array.from({ length: B }, (_, b) => Array.from({ length: L }, (_, i) => 1 + ((i + b) % 90))),
    [B, L],
    'int32',
  );
  const mask = tf.ones([B, L]) as tf.Tensor2D;
  const vars = [...m.trainableVariables().values()];
  m.forward(ids, mask).dispose(); // the model's kept weight transposes (wasm) are made once, before measuring
  const peak = (checkpoint: boolean) =>
    peakExtraBytes(() => {
      const { value, grads } = tf.variableGrads(
        () => tf.sum(tokenLogProbs(m, ids, mask, { gradientCheckpointing: checkpoint }).logp) as tf.Scalar,
        vars,
      );
      tf.dispose([value, ...Object.values(grads)]);
    });
  const off = await peak(false);
  const on = await peak(true);
  t.diagnostic(`${tf.getBackend()}: peak above the weights ${(off / 2 ** 20).toFixed(2)} MiB off, ${(on / 2 ** 20).toFixed(2)} MiB on`);
  assert.ok(on < 0.75 * off, `checkpointing on: ${on} bytes at the peak, off: ${off}`);
  tf.dispose([ids, mask]);
  m.dispose();
});

test("a forward without a tape frees each layer's intermediates: its peak does not grow with the layers", async (t) => {
  const L = 96;
  const ids = tf.tensor2d([Array.from({ length: L }, (_, i) => 1 + (i % 90))], [1, L], 'int32');
  const mask = tf.ones([1, L]) as tf.Tensor2D;
  const extra: number[] = [];
  for (const layers of [1, 4]) {
    const m = Qwen2.random(tinyPreset(101, { num_hidden_layers: layers }), 8);
    m.forward(ids, mask).dispose(); // the model's kept weight transposes (wasm) are made once, before measuring
    const peaks: number[] = [];
    for (const checkpoint of [false, true]) {
      const outBytes = L * 101 * 4; // the logits it returns
      peaks.push((await peakExtraBytes(() => m.forward(ids, mask, { gradientCheckpointing: checkpoint }).dispose())) - outBytes);
    }
    extra.push(Math.max(...peaks));
    m.dispose();
  }
  t.diagnostic(
    `${tf.getBackend()}: peak above weights and logits ${extra.map((b) => `${(b / 2 ** 10).toFixed(0)} KiB`).join(' (1 layer), ')} (4 layers)`,
  );
  assert.ok(extra[1] < 1.5 * extra[0], `4 layers hold ${extra[1]} bytes at the peak, 1 layer ${extra[0]}`);
  tf.dispose([ids, mask]);
});
