/** The model's weights as a stream: read off the device in row blocks, the same file as the whole tensors give. */

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { tinyPreset } from '../../../../src/model/config';
import { encodeSafetensors, type SafeTensor } from '../../../../src/model/hf/safetensors';
import { modelSafetensors } from '../../../../src/model/hf/weights';
import { Qwen2 } from '../../../../src/model/qwen2';
import { initTestBackend } from '../../../helpers/backend';

before(async () => {
  await initTestBackend();
});

test('an embedding bigger than one piece streams in row blocks and the file is the one its whole tensors make', async () => {
  // 70,000 x 128 = 8.96M elements: more than the 8M of one piece, so the embedding comes in two row blocks.
  const model = Qwen2.random(
    { ...tinyPreset(70_000), hidden_size: 128, intermediate_size: 64, num_attention_heads: 4, num_key_value_heads: 2 },
    5,
  );
  const whole: Record<string, SafeTensor> = {};
  for (const [name, t] of model.toNamedTensors())
    whole[name] = { dtype: 'F32', shape: [...t.shape], data: (await t.data()) as Float32Array };
  const expected = encodeSafetensors(whole, { format: 'pt' });
  const tensorsBefore = tf.memory().numTensors;
  const stream = modelSafetensors(model);
  assert.equal(stream.bytes, expected.length);
  const pieces: number[] = [];
  const got = new Uint8Array(stream.bytes);
  let at = 0;
  for await (const piece of stream.chunks()) {
    got.set(piece, at);
    at += piece.length;
    pieces.push(piece.length);
  }
  assert.deepEqual(got, expected);
  assert.ok(Math.max(...pieces) <= 8 * 1024 * 1024 * 4, `largest piece ${Math.max(...pieces)} bytes`);
  assert.equal(tf.memory().numTensors, tensorsBefore, 'every row block was freed');
  model.dispose();
});
