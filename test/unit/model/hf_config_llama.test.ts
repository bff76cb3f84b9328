/**
 * config.json of Llama checkpoints (LlamaForCausalLM, e.g. SmolLM2): what starpo reads as transformers 5 reads
 * it (hf_config.test.ts checks the recorded cases), and what it does not compute refused at config check,
 * naming the file, the key, the value and what is allowed.
 */

import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { hfModelConfig, pretrainedProblems, readPretrainedConfig, readPretrainedTokenizer } from '../../../src/model/hf/folder';
import { materializeHfVariant, removeHfFolder } from '../../helpers/hf_models';

let dir = '';
let pristine: Record<string, unknown> = {};
const configFile = () => join(dir, 'config.json');

before(() => {
  dir = materializeHfVariant('llama_smollm2_v4');
  pristine = JSON.parse(readFileSync(configFile(), 'utf8'));
});
after(() => removeHfFolder(dir));

/** Writes config.json = the fixture's with `patch` over it (undefined deletes). */
function writeConfig(patch: Record<string, unknown>): void {
  const config = { ...pristine, ...patch };
  for (const [k, v] of Object.entries(patch)) if (v === undefined) delete config[k];
  writeFileSync(configFile(), JSON.stringify(config));
}

/** pretrainedProblems of the folder with config.json patched (see writeConfig). */
function problemsWith(patch: Record<string, unknown>, sequenceLength = 64): string[] {
  writeConfig(patch);
  return pretrainedProblems(dir, sequenceLength);
}

test("SmolLM2's config.json loads: its own keys, RoPE base, epsilon, tied head and no biases", () => {
  assert.deepEqual(problemsWith({}), []);
  const config = readPretrainedConfig(dir);
  assert.equal(config.model_type, 'llama');
  assert.deepEqual(
    [config.rope_theta, config.rms_norm_eps, config.tie_word_embeddings, config.attention_bias, config.mlp_bias],
    [1e5, 1e-5, true, false, false],
  );
});

test("absent keys take LlamaConfig's defaults, not Qwen2's", () => {
  writeConfig({ attention_bias: undefined, mlp_bias: undefined, max_position_embeddings: undefined, num_key_value_heads: undefined });
  const config = readPretrainedConfig(dir);
  assert.deepEqual(
    [config.attention_bias, config.mlp_bias, config.max_position_embeddings, config.num_key_value_heads],
    [false, false, 2048, config.num_attention_heads],
  );
  assert.match(
    problemsWith({ max_position_embeddings: undefined }, 4096)[0] ?? '',
    /sequence_length 4096 is more than .*config\.json max_position_embeddings \(2048\)/,
  );
});

test("Llama 3's llama3 RoPE, another head_dim, another activation and non-boolean biases are refused", () => {
  const llama3 = {
    rope_theta: 5e5,
    rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 },
  };
  assert.deepEqual(problemsWith(llama3), [
    `${configFile()}: rope_scaling.rope_type = "llama3" is not supported; allowed: "default" (plain RoPE; scaled RoPE is not implemented)`,
  ]);
  assert.deepEqual(problemsWith({ head_dim: 16 }), [
    `${configFile()}: head_dim = 16 is not supported; allowed: hidden_size/num_attention_heads = 8`,
  ]);
  assert.deepEqual(problemsWith({ hidden_act: 'gelu' }), [`${configFile()}: hidden_act = "gelu" is not supported; allowed: 'silu'`]);
  assert.deepEqual(problemsWith({ attention_bias: 1 }), [`${configFile()}: attention_bias = 1 is invalid; allowed: true or false`]);
  assert.deepEqual(problemsWith({ mlp_bias: 'no' }), [`${configFile()}: mlp_bias = "no" is invalid; allowed: true or false`]);
});

test('keys transformers 5 does not read are ignored: pretraining_tp, rope_interleaved, use_sliding_window', () => {
  assert.deepEqual(problemsWith({ pretraining_tp: 2, rope_interleaved: false, use_sliding_window: true }), []);
});

test('attention_bias and mlp_bias need their tensors: a folder without them is refused, naming the first', () => {
  assert.deepEqual(problemsWith({ attention_bias: true }), [
    `${join(dir, 'model.safetensors')}: tensor model.layers.0.self_attn.q_proj.bias is missing (config.json needs shape [48])`,
  ]);
  assert.match(
    problemsWith({ mlp_bias: true })[0] ?? '',
    /tensor model\.layers\.0\.mlp\.gate_proj\.bias is missing \(config\.json needs shape \[128\]\)/,
  );
});

test("a sliding_window left in a Llama config is refused past the window (transformers' cache would slide)", () => {
  assert.deepEqual(problemsWith({ sliding_window: 16 }), [
    `${configFile()}: sliding_window = 16 is active (transformers' KV cache slides every layer of a llama model by it) and shorter than sequence_length 64; allowed: sequence_length <= 16, or a config whose layers all attend fully (sliding-window attention is not implemented)`,
  ]);
  assert.deepEqual(problemsWith({ sliding_window: 16 }, 16), []);
  assert.deepEqual(problemsWith({ sliding_window: null }), []);
  assert.match(
    problemsWith({ layer_types: ['sliding_attention', 'full_attention'] })[0] ?? '',
    /config\.json: layer_types\[0\] = "sliding_attention" but sliding_window = null gives no window \(transformers fails on it\); allowed: "full_attention", or a sliding_window/,
  );
});

test('export writes a LlamaForCausalLM config.json with its biases and head_dim, and no Qwen2 keys', () => {
  writeConfig({ attention_bias: true, mlp_bias: true });
  const exported = hfModelConfig(readPretrainedConfig(dir), readPretrainedTokenizer(dir));
  assert.deepEqual([exported.architectures, exported.model_type], [['LlamaForCausalLM'], 'llama']);
  assert.deepEqual([exported.attention_bias, exported.mlp_bias, exported.head_dim], [true, true, 8]);
  assert.deepEqual([exported.rope_theta, exported.rms_norm_eps, exported.tie_word_embeddings], [1e5, 1e-5, true]);
  assert.equal(exported.use_sliding_window, undefined);
});
