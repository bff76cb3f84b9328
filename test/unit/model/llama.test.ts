/**
 * The Llama architecture in the Qwen2 decoder: Qwen2 without the q/k/v bias, or with biases on q/k/v and
 * o_proj (`attention_bias`) and on the MLP (`mlp_bias`) as its config says. Random Llama models of both kinds
 * hold exactly their weights, train (every weight gets a gradient) and round-trip through safetensors; with
 * Qwen2's weights and zero biases the two architectures compute the same logits.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { countParams, type Qwen2Config, validateQwen2Config, weightShapes } from '../../../src/model/config';
import { configFromJSONBytes, configToJSONBytes, modelFromSafetensors, modelToSafetensors } from '../../../src/model/hf/weights';
import { tokenLogProbs } from '../../../src/model/logprobs';
import { Qwen2 } from '../../../src/model/qwen2';
import { initTestBackend } from '../../helpers/backend';

before(async () => {
  await initTestBackend();
});

/** A tiny SmolLM2-shaped Llama: 3 query heads per kv head, rope_theta 1e5, rms_norm_eps 1e-5, tied. */
function llama(extra: Record<string, unknown> = {}): Qwen2Config {
  return validateQwen2Config({
    model_type: 'llama',
    vocab_size: 50,
    hidden_size: 48,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 6,
    num_key_value_heads: 2,
    rope_theta: 1e5,
    rms_norm_eps: 1e-5,
    tie_word_embeddings: true,
    ...extra,
  });
}

const batch = () => ({
  ids: tf.tensor2d(
    [
      [1, 5, 9, 13, 17, 2],
      [1, 7, 2, 0, 0, 0],
    ],
    [2, 6],
    'int32',
  ),
  mask: tf.tensor2d(
    [
      [1, 1, 1, 1, 1, 1],
      [1, 1, 1, 0, 0, 0],
    ],
    [2, 6],
  ),
});

const biasNames = (cfg: Qwen2Config) =>
  weightShapes(cfg)
    .map(([name]) => name)
    .filter((name) => name.endsWith('.bias'));

test('a Llama config has no bias unless it says so, and then q/k/v/o and the MLP have one', () => {
  const plain = llama();
  assert.deepEqual([plain.attention_bias, plain.mlp_bias], [false, false]);
  assert.deepEqual(biasNames(plain), []);
  // embedding 50x48, per layer: 2 norms, q 48x48, k and v 16x48 each, o 48x48, 3 MLP 64x48; final norm
  assert.equal(countParams(plain), 50 * 48 + 2 * (2 * 48 + 48 * 48 + 2 * 16 * 48 + 48 * 48 + 3 * 64 * 48) + 48);
  const biased = llama({ attention_bias: true, mlp_bias: true });
  assert.deepEqual(
    biasNames(biased).filter((n) => n.startsWith('model.layers.0.')),
    ['q_proj', 'k_proj', 'v_proj', 'o_proj']
      .map((p) => `model.layers.0.self_attn.${p}.bias`)
      .concat(['gate_proj', 'up_proj', 'down_proj'].map((p) => `model.layers.0.mlp.${p}.bias`)),
  );
  const m = Qwen2.random(plain, 1);
  assert.deepEqual(
    [...m.trainableVariables().keys()].filter((n) => n.endsWith('.bias')),
    [],
  );
  m.dispose();
});

for (const [what, extra] of [
  ['without biases, untied', { tie_word_embeddings: false }],
  ['with attention and MLP biases', { attention_bias: true, mlp_bias: true }],
] as const) {
  test(`a random Llama ${what}: finite, non-zero gradients for every weight`, () => {
    const m = Qwen2.random(llama(extra), 2);
    const vars = m.trainableVariables();
    // Biases start at 0: give them values so that every gradient path is exercised.
    for (const [name, v] of vars) if (name.endsWith('.bias')) tf.tidy(() => v.assign(tf.randomNormal(v.shape, 0, 0.1, 'float32', 3)));
    const { ids, mask } = batch();
    const { value, grads } = tf.variableGrads(() => tf.neg(tf.mean(tokenLogProbs(m, ids, mask).logp)) as tf.Scalar, [...vars.values()]);
    assert.ok(Number.isFinite(value.dataSync()[0]));
    for (const [name, v] of vars) {
      const g = grads[v.name];
      assert.ok(g, `gradient for ${name}`);
      assert.deepEqual(g.shape, v.shape);
      const d = g.dataSync();
      assert.ok(d.every(Number.isFinite), `finite gradient for ${name}`);
      // Softmax ignores a bias added to every key alike, so k_proj's bias gets no gradient (as in Qwen2).
      if (!name.endsWith('k_proj.bias'))
        assert.ok(
          d.some((x) => x !== 0),
          `non-zero gradient for ${name}`,
        );
    }
    tf.dispose([value, ...Object.values(grads), ids, mask]);
    m.dispose();
  });
}

test('Qwen2 and Llama are one decoder: the same weights with zero biases give the same logits, and biases count', () => {
  const cfg = llama({ attention_bias: true, mlp_bias: true });
  const m = Qwen2.random(cfg, 4);
  const named = m.toNamedTensors();
  const withoutBiases = new Map([...named].filter(([name]) => !name.endsWith('.bias')));
  const plain = Qwen2.fromNamedTensors(llama(), withoutBiases);
  const qwen2 = Qwen2.fromNamedTensors(validateQwen2Config({ ...llama(), model_type: 'qwen2' }), named);
  const { ids, mask } = batch();
  const logits = (model: Qwen2) => tf.tidy(() => model.forward(ids, mask).dataSync());
  const reference = logits(m);
  assert.deepEqual(logits(plain), reference);
  assert.deepEqual(logits(qwen2), reference);
  // o_proj's and down_proj's biases (Llama only) change the output once they are not zero
  for (const name of ['model.layers.1.self_attn.o_proj.bias', 'model.layers.1.mlp.down_proj.bias']) {
    const v = m.trainableVariables().get(name) as tf.Variable;
    tf.tidy(() => v.assign(tf.fill(v.shape, 0.5)));
    assert.notDeepEqual(logits(m), reference, name);
    tf.tidy(() => v.assign(tf.zerosLike(v)));
  }
  tf.dispose([ids, mask]);
  [m, plain, qwen2].forEach((x) => x.dispose());
});

test('a Llama model and its config.json round-trip through a checkpoint', async () => {
  const cfg = llama({ attention_bias: true });
  const back = configFromJSONBytes(configToJSONBytes(cfg));
  assert.deepEqual(back, cfg);
  const m = Qwen2.random(cfg, 5);
  const m2 = modelFromSafetensors(back, await modelToSafetensors(m));
  const { ids, mask } = batch();
  assert.deepEqual(m2.forward(ids, mask).dataSync(), m.forward(ids, mask).dataSync());
  assert.deepEqual([...m2.trainableVariables().keys()], [...m.trainableVariables().keys()]);
  tf.dispose([ids, mask]);
  [m, m2].forEach((x) => x.dispose());
});
