/**
 * `config_overrides` resizes the tiny preset (HF run_clm's name for a model trained from scratch): the sizes
 * reach the model config; an invalid size, an unknown key or a model folder is refused before anything starts,
 * naming the key.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countParams, tinyPreset } from '../../../src/model/config';
import { charTokenizer } from '../../../src/model/tokenizer';
import { loadConfigFile } from '../../../src/preflight/load';
import { configErrorOf } from '../../helpers/config_error';
import { materializeHfVariant, removeHfFolder } from '../../helpers/hf_models';

const vocab = charTokenizer().vocabSize;

test('the sizes replace the preset and reach the model config', () => {
  const { config } = loadConfigFile('configs/frozen_lake.yaml', [
    'config_overrides.hidden_size=128',
    'config_overrides.intermediate_size=384',
  ]);
  assert.deepEqual(config.config_overrides, { hidden_size: 128, intermediate_size: 384 });
  const shape = tinyPreset(vocab, config.config_overrides);
  assert.deepEqual([shape.hidden_size, shape.intermediate_size, shape.num_hidden_layers, shape.num_attention_heads], [128, 384, 2, 4]);
  assert.ok(countParams(shape) > countParams(tinyPreset(vocab)));
  assert.deepEqual(loadConfigFile('configs/frozen_lake.yaml').config.config_overrides, {});
});

test('sizes that make no valid model are refused, naming config_overrides and the reason', () => {
  const err = configErrorOf(() => loadConfigFile('configs/frozen_lake.yaml', ['config_overrides.num_attention_heads=3']));
  assert.equal(err.problems.length, 1, err.message);
  assert.match(
    err.problems[0],
    /^`config_overrides` \(from `config_overrides\.num_attention_heads=3` on the command line\): \{"num_attention_heads":3\} makes no valid tiny model: .*hidden_size = 64 .*divisible/,
  );
});

test('a key that is not a size is refused', () => {
  const err = configErrorOf(() => loadConfigFile('configs/frozen_lake.yaml', ['config_overrides.vocab_size=10']));
  assert.match(err.message, /config_overrides/);
  assert.match(err.message, /vocab_size/);
});

test('with a model folder, config_overrides is refused: the weights fix the sizes', () => {
  const dir = materializeHfVariant('tied_gqa');
  try {
    const err = configErrorOf(() =>
      loadConfigFile('configs/frozen_lake.yaml', [`pretrain=${dir}`, 'warmup.type=none', 'config_overrides.hidden_size=128']),
    );
    assert.ok(
      err.problems.some(
        (p) =>
          p.startsWith(
            '`config_overrides` (from `config_overrides.hidden_size=128` on the command line): hidden_size set with `pretrain: ',
          ) && p.includes('allowed only with `pretrain: tiny`'),
      ),
      err.message,
    );
  } finally {
    removeHfFolder(dir);
  }
});
