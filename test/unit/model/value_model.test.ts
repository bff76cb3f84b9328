import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { tinyPreset } from '../../../src/model/config';
import { Qwen2 } from '../../../src/model/qwen2';
import { VALUE_HEAD, ValueModel } from '../../../src/model/value_model';
import { initTestBackend } from '../../helpers/backend';

before(async () => {
  await initTestBackend();
});

const small = {
  ...tinyPreset(16),
  hidden_size: 8,
  intermediate_size: 16,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  num_key_value_heads: 2,
};

test('critic from a policy: values start at 0, have shape [B, L], and the head learns', () => {
  const policy = Qwen2.random(small, 7);
  const critic = ValueModel.fromPolicy(policy);
  const ids = tf.tensor2d(
    [
      [1, 2, 3],
      [4, 5, 0],
    ],
    [2, 3],
    'int32',
  );
  const am = tf.tensor2d([
    [1, 1, 1],
    [1, 1, 0],
  ]);
  const v = critic.values(ids, am);
  assert.deepEqual(v.shape, [2, 3]);
  assert.deepEqual(Array.from(v.dataSync()), [0, 0, 0, 0, 0, 0]);
  // d(sum V)/d(head) = sum of final hidden states; non-zero, so one gradient step moves the values.
  const vars = critic.trainableVariables();
  assert.ok(vars.has(VALUE_HEAD) && vars.has('model.norm.weight'));
  const { grads } = tf.variableGrads(() => tf.sum(critic.values(ids, am)) as tf.Scalar, [...vars.values()]);
  const headGrad = grads[[...vars.values()].find((x) => x.name.startsWith(VALUE_HEAD))!.name];
  assert.ok(tf.norm(headGrad).dataSync()[0] > 0);
  // Padding does not change a row's real values: row 1 alone equals row 1 in the batch.
  const hidden = policy.hiddenStates(ids, am).arraySync();
  const alone = policy.hiddenStates(tf.tensor2d([[4, 5]], [1, 2], 'int32'), tf.tensor2d([[1, 1]])).arraySync();
  for (let t = 0; t < 2; t++) for (let e = 0; e < 8; e++) assert.ok(Math.abs(hidden[1][t][e] - alone[0][t][e]) < 1e-5);
  critic.dispose();
  policy.dispose();
});

test('critic safetensors round trip is exact; a wrong head shape is named', async () => {
  const policy = Qwen2.random(small, 3);
  const critic = ValueModel.fromPolicy(policy);
  const vars = critic.trainableVariables();
  vars.get(VALUE_HEAD)!.assign(tf.tensor2d([[0.5, -1, 2, 0, 0, 1, 3, -2]]));
  const bytes = await critic.toSafetensors();
  const back = ValueModel.fromSafetensors(small, bytes);
  const ids = tf.tensor2d([[1, 2, 3]], [1, 3], 'int32');
  const am = tf.tensor2d([[1, 1, 1]]);
  assert.deepEqual(Array.from(back.values(ids, am).dataSync()), Array.from(critic.values(ids, am).dataSync()));
  assert.throws(
    () => ValueModel.fromSafetensors({ ...small, hidden_size: 16, intermediate_size: 16 }, bytes),
    /score\.weight has shape \[1,8\], expected \[1, 16\]/,
  );
  back.dispose();
  critic.dispose();
  policy.dispose();
});
