/**
 * LoRA adapters on the decoder (src/model/lora.ts): which modules ROLL's lora_target names, PEFT's initialisation,
 * and that a model with adapters computes what the merged weights compute, in the training forward and in cached
 * generation, while its base view and its own weights stay untouched. PEFT's own numbers: lora_peft.test.ts.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { loraSettings } from '../../../src/contract';
import { tinyPreset } from '../../../src/model/config';
import { generate } from '../../../src/model/generate';
import { tokenLogProbs } from '../../../src/model/logprobs';
import { LoraAdapters } from '../../../src/model/lora';
import { additionalWeights, loraTargets } from '../../../src/model/lora_targets';
import { Qwen2 } from '../../../src/model/qwen2';
import { initTestBackend } from '../../helpers/backend';
import { relDiff } from '../../helpers/tensor_diff';

before(async () => {
  await initTestBackend();
});

const cfg = tinyPreset(101, { num_hidden_layers: 2 });
const settings = (lora_target: string, extra: { lora_rank?: number; additional_target?: string } = {}) =>
  loraSettings({
    lora_target,
    lora_rank: extra.lora_rank ?? 4,
    lora_alpha: null,
    lora_dropout: 0,
    additional_target: extra.additional_target ?? null,
  });
const must = <T>(v: T | null): T => {
  assert.ok(v !== null);
  return v;
};

test('lora_target names modules as ROLL and PEFT do: all, names, dotted tails, regular expressions', () => {
  const all = loraTargets(cfg, must(settings('all')).target);
  assert.equal(all.length, 2 * 7);
  assert.ok(all.every((m) => /^model\.layers\.\d\.(self_attn|mlp)\.\w+_proj$/.test(m)));
  assert.deepEqual(loraTargets(cfg, must(settings('q_proj, v_proj')).target), [
    'model.layers.0.self_attn.q_proj',
    'model.layers.0.self_attn.v_proj',
    'model.layers.1.self_attn.q_proj',
    'model.layers.1.self_attn.v_proj',
  ]);
  assert.deepEqual(loraTargets(cfg, must(settings('layers.1.mlp.down_proj')).target), ['model.layers.1.mlp.down_proj']);
  const regex = must(settings('.*\\.0\\..*(gate|up)_proj'));
  assert.equal(regex.target.kind, 'regex');
  assert.deepEqual(loraTargets(cfg, regex.target), ['model.layers.0.mlp.gate_proj', 'model.layers.0.mlp.up_proj']);
  assert.throws(
    () => loraTargets(cfg, must(settings('q_proj,qkv')).target),
    /"qkv" names no linear layer of the decoder; allowed: all, a comma list of q_proj/,
  );
  assert.throws(() => loraTargets(cfg, must(settings('lm_head')).target), /"lm_head" names no linear layer/);
  assert.throws(() => loraTargets(cfg, must(settings('.*attn(')).target), /not a valid regular expression/);
  assert.throws(() => loraTargets(cfg, must(settings('.*\\.lm_(head)')).target), /matches no linear layer/);
  assert.equal(must(settings('all')).alpha, 8, "lora_alpha defaults to 2 x lora_rank (ROLL's ModelArguments)");
  assert.deepEqual(additionalWeights(cfg, ['post_attention_layernorm']), [
    'model.layers.0.post_attention_layernorm.weight',
    'model.layers.1.post_attention_layernorm.weight',
  ]);
  assert.throws(
    () => additionalWeights(cfg, ['vision_tower']),
    /"vision_tower" names no module of the model; allowed: module names such as/,
  );
});

test("fresh adapters are PEFT's: A uniform in +-1/sqrt(in), B zero, so the model computes exactly what its base does", () => {
  const model = Qwen2.random(cfg, 7);
  const ids = tf.tensor2d([[5, 9, 14, 3, 22, 40]], [1, 6], 'int32');
  const mask = tf.ones([1, 6]) as tf.Tensor2D;
  const before = model.forward(ids, mask);
  const adapters = LoraAdapters.init(cfg, must(settings('all')), 11, () => assert.fail('no additional target'));
  for (const [name, v] of adapters.variables()) {
    const values = Array.from(v.dataSync());
    if (name.endsWith('lora_B.weight'))
      assert.ok(
        values.every((x) => x === 0),
        `${name} is zero`,
      );
    else {
      const bound = 1 / Math.sqrt(v.shape[1] as number);
      assert.ok(
        values.every((x) => Math.abs(x) <= bound),
        `${name} within +-${bound}`,
      );
      const std = Math.sqrt(values.reduce((s, x) => s + x * x, 0) / values.length);
      assert.ok(Math.abs(std - bound / Math.sqrt(3)) < 0.25 * bound, `${name}: std ${std} of a uniform in +-${bound}`);
    }
  }
  model.setAdapters(adapters);
  const after = model.forward(ids, mask);
  assert.deepEqual(after.dataSync(), before.dataSync());
  tf.dispose([before, after, ids, mask]);
  model.dispose();
});

test('a model with adapters computes what its merged weights compute; only the adapters train; its base view is the base', () => {
  const s = must(settings('all', { lora_rank: 3, additional_target: 'post_attention_layernorm' }));
  const model = Qwen2.random(cfg, 7);
  const baseWeights = new Map([...model.toNamedTensors()].map(([n, t]) => [n, tf.clone(t)]));
  const adapters = LoraAdapters.init(cfg, s, 11, (name) => model.toNamedTensors().get(name) as tf.Tensor);
  for (const [name, v] of adapters.variables()) {
    // Non-zero B (and a changed copy of the norm), so the adapters matter.
    v.assign(tf.tidy(() => tf.add(v, tf.mul(tf.randomNormal(v.shape, 0, 1, 'float32', name.length), 0.05))));
  }
  const mergedTensors = new Map(model.toNamedTensors());
  for (const m of adapters.targets()) mergedTensors.set(`${m}.weight`, adapters.merged(m, mergedTensors.get(`${m}.weight`) as tf.Tensor2D));
  for (const name of additionalWeights(cfg, s.additional)) mergedTensors.set(name, adapters.copyOf(name) as tf.Tensor);
  const merged = Qwen2.fromNamedTensors(cfg, mergedTensors);
  model.setAdapters(adapters);

  const ids = tf.tensor2d(
    [
      [5, 9, 14, 3, 22, 40, 7],
      [8, 2, 61, 33, 12, 0, 0],
    ],
    [2, 7],
    'int32',
  );
  const mask = tf.tensor2d(
    [
      [1, 1, 1, 1, 1, 1, 1],
      [1, 1, 1, 1, 1, 0, 0],
    ],
    [2, 7],
  );
  const got = tokenLogProbs(model, ids, mask as tf.Tensor2D).logp;
  const want = tokenLogProbs(merged, ids, mask as tf.Tensor2D).logp;
  assert.ok(relDiff(got, want) < 1e-5, `training forward: ${relDiff(got, want)}`);
  const gen = (m: Qwen2) =>
    generate(
      m,
      [
        [5, 9, 14],
        [8, 2],
      ],
      { maxNewTokens: 6, temperature: 0, doSample: false, stopIds: [] },
    ).tokens;
  assert.deepEqual(gen(model), gen(merged), 'cached generation with adapters = the merged model');

  const trainable = [...model.trainableVariables().keys()];
  assert.equal(trainable.filter((n) => n.includes('.lora_')).length, 2 * 2 * 7);
  assert.deepEqual(
    trainable.filter((n) => !n.includes('.lora_')),
    ['model.layers.0.post_attention_layernorm.weight', 'model.layers.1.post_attention_layernorm.weight'],
  );
  const { grads } = tf.variableGrads(
    () => tf.sum(tokenLogProbs(model, ids, mask as tf.Tensor2D).logp) as tf.Scalar,
    [...model.trainableVariables().values()],
  );
  assert.equal(Object.keys(grads).length, trainable.length, 'a gradient for every adapter and the norm copies, none for the base');
  tf.dispose(Object.values(grads));

  const base = Qwen2.fromNamedTensors(cfg, baseWeights);
  const viewed = tokenLogProbs(model.baseView(), ids, mask as tf.Tensor2D).logp;
  const plain = tokenLogProbs(base, ids, mask as tf.Tensor2D).logp;
  assert.deepEqual(viewed.dataSync(), plain.dataSync(), 'the base view computes with the untouched base weights');
  for (const [name, t] of model.toNamedTensors()) assert.deepEqual(t.dataSync(), (baseWeights.get(name) as tf.Tensor).dataSync(), name);
  tf.dispose([got, want, viewed, plain, ids, mask, ...baseWeights.values()]);
  for (const m of [model, merged, base]) m.dispose();
});

test('adapters read back from their named tensors, and a stray, missing or misshapen tensor is refused by name', () => {
  const s = must(settings('q_proj,v_proj', { lora_rank: 2 }));
  const model = Qwen2.random(cfg, 7);
  const adapters = LoraAdapters.init(cfg, s, 3, () => assert.fail('no additional target'));
  const named = new Map<string, tf.Tensor>(adapters.variables());
  const back = LoraAdapters.fromNamedTensors(cfg, s, named);
  for (const [name, v] of back.variables()) assert.deepEqual(v.dataSync(), (named.get(name) as tf.Tensor).dataSync(), name);
  back.dispose();
  const without = new Map(named);
  without.delete('model.layers.1.self_attn.v_proj.lora_B.weight');
  assert.throws(
    () => LoraAdapters.fromNamedTensors(cfg, s, without),
    /adapter tensor model\.layers\.1\.self_attn\.v_proj\.lora_B\.weight is missing/,
  );
  const stray = new Map(named).set('model.layers.0.mlp.up_proj.lora_A.weight', tf.zeros([2, cfg.hidden_size]));
  assert.throws(() => LoraAdapters.fromNamedTensors(cfg, s, stray), /up_proj\.lora_A\.weight is not an adapter of the target modules/);
  const wrong = new Map(named).set('model.layers.0.self_attn.q_proj.lora_A.weight', tf.zeros([3, cfg.hidden_size]));
  assert.throws(() => LoraAdapters.fromNamedTensors(cfg, s, wrong), /q_proj\.lora_A\.weight has shape \[3,\d+\], expected \[2,\d+\]/);
  adapters.dispose();
  model.dispose();
});

test('lora_dropout drops adapter inputs in training forwards only, the same masks for the same seed, also when checkpointing recomputes', () => {
  const s = { ...must(settings('all', { lora_rank: 2 })), dropout: 0.5 };
  const model = Qwen2.random(cfg, 7);
  const adapters = LoraAdapters.init(cfg, s, 11, () => assert.fail('no additional target'));
  for (const [name, v] of adapters.variables()) {
    v.assign(tf.tidy(() => tf.add(v, tf.mul(tf.randomNormal(v.shape, 0, 1, 'float32', name.length), 0.05))));
  }
  model.setAdapters(adapters);
  const ids = tf.tensor2d([[5, 9, 14, 3, 22, 40, 7]], [1, 7], 'int32');
  const mask = tf.ones([1, 7]) as tf.Tensor2D;
  const logp = (opts: { loraDropoutSeed?: number; gradientCheckpointing?: boolean }) => tokenLogProbs(model, ids, mask, opts).logp;
  const plain = logp({});
  const a = logp({ loraDropoutSeed: 3 });
  const b = logp({ loraDropoutSeed: 3 });
  const c = logp({ loraDropoutSeed: 4 });
  assert.deepEqual(a.dataSync(), b.dataSync(), 'the same seed draws the same masks');
  assert.notDeepEqual(a.dataSync(), plain.dataSync(), 'dropout changes the output');
  assert.notDeepEqual(a.dataSync(), c.dataSync(), 'another seed draws other masks');
  const grads = (gradientCheckpointing: boolean) => {
    const { grads } = tf.variableGrads(
      () => tf.sum(logp({ loraDropoutSeed: 3, gradientCheckpointing })) as tf.Scalar,
      [...model.trainableVariables().values()],
    );
    return grads;
  };
  const kept = grads(false);
  const recomputed = grads(true);
  for (const name of Object.keys(kept)) {
    assert.ok(relDiff(recomputed[name] as tf.Tensor, kept[name] as tf.Tensor) < 1e-5, `${name}: recomputed layers draw the same masks`);
  }
  tf.dispose([plain, a, b, c, ids, mask, ...Object.values(kept), ...Object.values(recomputed)]);
  model.dispose();
});

test('adapters without dropout: the same gradients with gradient checkpointing on and off (off wasm: the lean layer with adapters)', () => {
  const model = Qwen2.random(cfg, 7);
  const adapters = LoraAdapters.init(cfg, must(settings('all', { lora_rank: 2 })), 11, () => assert.fail('no additional target'));
  for (const [name, v] of adapters.variables()) {
    v.assign(tf.tidy(() => tf.add(v, tf.mul(tf.randomNormal(v.shape, 0, 1, 'float32', name.length), 0.05))));
  }
  model.setAdapters(adapters);
  const ids = tf.tensor2d([[5, 9, 14, 3, 22, 40, 7]], [1, 7], 'int32');
  const mask = tf.ones([1, 7]) as tf.Tensor2D;
  const grads = (gradientCheckpointing: boolean) =>
    tf.variableGrads(
      () => tf.sum(tokenLogProbs(model, ids, mask, { gradientCheckpointing }).logp) as tf.Scalar,
      [...model.trainableVariables().values()],
    ).grads;
  const kept = grads(false);
  const recomputed = grads(true);
  assert.equal(Object.keys(kept).length, 2 * 2 * 7, 'a gradient for every adapter, none for the frozen weights');
  for (const name of Object.keys(kept)) assert.ok(relDiff(recomputed[name] as tf.Tensor, kept[name] as tf.Tensor) < 1e-5, name);
  tf.dispose([ids, mask, ...Object.values(kept), ...Object.values(recomputed)]);
  model.dispose();
});
