/**
 * The decoder layer with its own backward pass (src/model/lean_layer.ts, the training forward off wasm): what a
 * training forward keeps for the backward pass is, per layer, only the tensors that backward reads, and all of it is
 * gone once the gradients are out. Its numbers are the transformers fixtures' (hf_fidelity, llama, smollm2 tests).
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { headDim, tinyPreset } from '../../../src/model/config';
import { tokenLogProbs } from '../../../src/model/logprobs';
import { Qwen2 } from '../../../src/model/qwen2';
import { initTestBackend } from '../../helpers/backend';

before(async () => {
  await initTestBackend();
});

test("a training forward keeps per decoder layer only what the layer's backward reads, and the backward frees it", async (t) => {
  if (tf.getBackend() === 'wasm') {
    t.skip('wasm runs the decoder layers as plain ops (lean_layer.ts is for the other backends)');
    return;
  }
  const [B, L] = [2, 40];
  const ids = tf.tensor2d(
    Array.from({ length: B }, (_, b) => Array.from({ length: L }, (_, i) => 1 + ((i * 7 + b) % 90))),
    [B, L],
    'int32',
  );
  const mask = tf.ones([B, L]) as tf.Tensor2D;
  /** Bytes held between the forward and the backward of `layers` layers, and the leftover once the backward is done. */
  const held = (layers: number) => {
    const m = Qwen2.random(tinyPreset(101, { num_hidden_layers: layers }), 3);
    m.forward(ids, mask).dispose(); // the model's stacked q/k/v weights are made once, before measuring
    const start = tf.memory().numBytes;
    let kept = 0;
    const { value, grads } = tf.variableGrads(() => {
      const loss = tf.sum(tokenLogProbs(m, ids, mask).logp) as tf.Scalar;
      kept = tf.memory().numBytes - start;
      return loss;
    }, [...m.trainableVariables().values()]);
    tf.dispose([value, ...Object.values(grads)]);
    const left = tf.memory().numBytes - start;
    m.dispose();
    return { kept, left };
  };
  const one = held(1);
  const three = held(3);
  const c = tinyPreset(101);
  const [N, E, I, H, KVH, D] = [B * L, c.hidden_size, c.intermediate_size, c.num_attention_heads, c.num_key_value_heads, headDim(c)];
  // x, h; the two RMSNorm scales; q (grouped), k, v; the attention output; gate, up; and copies sharing the memory of
  // tensors that exist anyway: the stacked q/k/v weight, the RoPE tables, the mask's bias (one chunk at L = 40).
  const layerSaves = 2 * N * E + 2 * N + N * H * D + 2 * N * KVH * D + N * H * D + 2 * N * I;
  const shared = (H + 2 * KVH) * D * E + 2 * N * D + B * L * (H / KVH) * L;
  const perLayer = (three.kept - one.kept) / 2;
  t.diagnostic(`${tf.getBackend()}: ${perLayer} bytes per layer held for the backward pass, at most ${4 * (layerSaves + shared)}`);
  assert.ok(perLayer > 0 && perLayer <= 4 * (layerSaves + shared), `${perLayer} bytes per layer`);
  assert.equal(three.left, 0, 'nothing left after the backward pass');
  tf.dispose([ids, mask]);
});
