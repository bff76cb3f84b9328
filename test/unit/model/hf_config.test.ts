/**
 * config.json of Hub checkpoints, Qwen2 and Llama, in the transformers 4 and 5 spellings: read as transformers 5
 * reads it (test/fixtures/hf/models/config_semantics.json, recorded by make_fixtures.py from transformers' own
 * Qwen2Config and LlamaConfig), and what starpo does not compute refused at `config check` and `train` naming the
 * file, the key, the value and what is allowed.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { headDim, layerWindows, ropeOf, validateQwen2Config, weightShapes } from '../../../src/model/config';
import { pretrainedProblems } from '../../../src/model/hf/folder';
import { hfTokenizer } from '../../../src/model/hf/tokenizer';
import { Qwen2 } from '../../../src/model/qwen2';
import { initTestBackend } from '../../helpers/backend';
import { HF_MODELS_DIR, materializeHfVariant, QWEN_TOKENIZER_DIR, removeHfFolder } from '../../helpers/hf_models';

/** What transformers made of a config.json: the keys starpo reads, or the error it raised. */
interface SemanticsRead {
  rope_type: string;
  rope_theta: number;
  layer_windows: Array<number | null>;
  rms_norm_eps: number;
  tie_word_embeddings: boolean;
  max_position_embeddings: number;
  num_key_value_heads: number;
  head_dim: number;
  /** The bias parameters of a decoder layer, e.g. "self_attn.q_proj.bias". */
  biases: string[];
}

interface SemanticsCase {
  case: string;
  config: Record<string, unknown>;
  transformers: SemanticsRead | { error: string };
}

const cases = (JSON.parse(readFileSync(join(HF_MODELS_DIR, 'config_semantics.json'), 'utf8')) as { cases: SemanticsCase[] }).cases;

for (const c of cases) {
  test(`config.json read as transformers 5 reads it: ${c.case}`, () => {
    const layers = c.config.num_hidden_layers as number;
    if ('error' in c.transformers) {
      assert.throws(() => validateQwen2Config(c.config), /^Error: (Qwen2|Llama)Config: [\w.[\]]+ = .* allowed: /);
      return;
    }
    const read = c.transformers;
    const { rope_type, rope_theta } = ropeOf(c.config);
    assert.deepEqual({ rope_type, rope_theta }, { rope_type: read.rope_type, rope_theta: read.rope_theta });
    assert.deepEqual(layerWindows(c.config, layers), read.layer_windows);
    if (rope_type !== 'default') {
      assert.throws(() => validateQwen2Config(c.config), /is not supported; allowed: "default"/);
      return;
    }
    const cfg = validateQwen2Config(c.config);
    const { rms_norm_eps, tie_word_embeddings, max_position_embeddings, num_key_value_heads } = cfg;
    assert.deepEqual(
      {
        rope_theta: cfg.rope_theta,
        rms_norm_eps,
        tie_word_embeddings,
        max_position_embeddings,
        num_key_value_heads,
        head_dim: headDim(cfg),
      },
      {
        rope_theta,
        rms_norm_eps: read.rms_norm_eps,
        tie_word_embeddings: read.tie_word_embeddings,
        max_position_embeddings: read.max_position_embeddings,
        num_key_value_heads: read.num_key_value_heads,
        head_dim: read.head_dim,
      },
    );
    const layer0 = 'model.layers.0.';
    const biases = weightShapes(cfg)
      .map(([name]) => name)
      .filter((name) => name.startsWith(layer0) && name.endsWith('.bias'))
      .map((name) => name.slice(layer0.length));
    assert.deepEqual(biases.sort(), read.biases);
  });
}

let dir = '';
let pristine: Record<string, unknown> = {};
const configFile = () => join(dir, 'config.json');

before(async () => {
  await initTestBackend();
  dir = materializeHfVariant('tied_gqa_v4');
  pristine = JSON.parse(readFileSync(configFile(), 'utf8'));
});
after(() => removeHfFolder(dir));

/** pretrainedProblems of the folder with config.json = the fixture's with `patch` over it (undefined deletes). */
function problemsWith(patch: Record<string, unknown>, sequenceLength = 64): string[] {
  const config = { ...pristine, ...patch };
  for (const [k, v] of Object.entries(patch)) if (v === undefined) delete config[k];
  writeFileSync(configFile(), JSON.stringify(config));
  return pretrainedProblems(dir, sequenceLength);
}

test('real Qwen2.5 configs load: use_sliding_window false with any sliding_window and max_window_layers, both spellings', () => {
  for (const [sliding_window, max_window_layers] of [
    [32768, 21],
    [32768, 24],
    [131072, 28],
    [4096, 0],
  ]) {
    assert.deepEqual(problemsWith({ sliding_window, max_window_layers }, 4096), [], `${sliding_window}/${max_window_layers}`);
  }
  const v5 = {
    rope_theta: undefined,
    rope_scaling: undefined,
    torch_dtype: undefined,
    dtype: 'float32',
    sliding_window: null,
    rope_parameters: { rope_theta: 1e6, rope_type: 'default' },
    layer_types: ['full_attention', 'full_attention'],
  };
  assert.deepEqual(problemsWith(v5, 4096), []);
});

test('rope scaling is refused in either spelling, naming file, key, value and allowed', () => {
  const yarn = { factor: 4.0, original_max_position_embeddings: 32768 };
  const v4 = problemsWith({ rope_scaling: { type: 'yarn', ...yarn } });
  assert.equal(v4.length, 1);
  assert.equal(
    v4[0],
    `${configFile()}: rope_scaling.type = "yarn" is not supported; allowed: "default" (plain RoPE; scaled RoPE is not implemented)`,
  );
  assert.match(
    problemsWith({ rope_scaling: { rope_type: 'dynamic', factor: 2 } })[0],
    /config\.json: rope_scaling\.rope_type = "dynamic" is not supported; allowed: "default"/,
  );
  const v5 = problemsWith({
    rope_theta: undefined,
    rope_scaling: undefined,
    rope_parameters: { rope_theta: 1e6, rope_type: 'yarn', ...yarn },
  });
  assert.equal(v5.length, 1);
  assert.equal(
    v5[0],
    `${configFile()}: rope_parameters.rope_type = "yarn" is not supported; allowed: "default" (plain RoPE; scaled RoPE is not implemented)`,
  );
});

test('an active sliding window shorter than sequence_length is refused at config check; one covering it is not', () => {
  const v4 = { use_sliding_window: true, sliding_window: 16, max_window_layers: 1 };
  assert.deepEqual(problemsWith(v4, 64), [
    `${configFile()}: sliding_window = 16 is active (use_sliding_window true, layer 1 >= max_window_layers = 1) and shorter than sequence_length 64; allowed: sequence_length <= 16, or a config whose layers all attend fully (sliding-window attention is not implemented)`,
  ]);
  assert.deepEqual(problemsWith(v4, 16), []);
  const v5 = { use_sliding_window: true, sliding_window: 24, layer_types: ['sliding_attention', 'full_attention'] };
  assert.match(
    problemsWith(v5, 64)[0],
    /config\.json: sliding_window = 24 is active \(use_sliding_window true, layer_types\[0\] = "sliding_attention"\) and shorter than sequence_length 64; allowed: sequence_length <= 24/,
  );
  assert.match(
    problemsWith({ use_sliding_window: false, layer_types: ['full_attention', 'sliding_attention'] })[0],
    /config\.json: layer_types\[1\] = "sliding_attention" but use_sliding_window = false .*; allowed: "full_attention", or use_sliding_window true with a sliding_window/,
  );
});

test('model types other than qwen2 and llama are refused, naming file, key, value and allowed', () => {
  assert.deepEqual(problemsWith({ model_type: 'qwen3' }), [
    `${configFile()}: model_type = "qwen3" is not supported; allowed: 'qwen2', 'llama'`,
  ]);
});

test('starpo config check and starpo train exit 2 on a sliding window shorter than sequence_length, before anything starts', () => {
  problemsWith({ use_sliding_window: true, sliding_window: 16, max_window_layers: 1 });
  for (const command of ['config check', 'train']) {
    const r = spawnSync(process.execPath, ['bin/starpo.js', ...command.split(' '), 'configs/frozen_lake.yaml', `pretrain=${dir}`], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 2, `${command}: ${r.stderr}`);
    assert.match(
      r.stderr,
      /config\.json: sliding_window = 16 is active .* shorter than sequence_length 768; allowed: sequence_length <= 16/,
      command,
    );
  }
});

test('the model refuses positions past an active sliding window rather than attend past it', () => {
  const config = validateQwen2Config({
    model_type: 'qwen2',
    vocab_size: 8,
    hidden_size: 8,
    intermediate_size: 8,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 2,
    max_position_embeddings: 64,
    use_sliding_window: true,
    sliding_window: 4,
    max_window_layers: 1,
  });
  const model = Qwen2.random(config, 1);
  try {
    const run = (L: number) => tf.tidy(() => model.forward(tf.zeros([1, L], 'int32'), tf.ones([1, L])).shape);
    assert.deepEqual(run(4), [1, 4, 8]);
    assert.throws(() => run(5), /position 4 >= sliding_window = 4 of layer 1 \(sliding-window attention is not implemented\)/);
  } finally {
    model.dispose();
  }
});

test('the real Qwen2.5 tokenizer.json (151,665 ids) loads', () => {
  const tokenizer = hfTokenizer(JSON.parse(readFileSync(join(QWEN_TOKENIZER_DIR, 'tokenizer.json'), 'utf8')));
  assert.equal(tokenizer.vocabSize, 151665);
  assert.equal(tokenizer.specialTokens['<|im_end|>'], 151645);
});
