import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { AdamW } from '../../../src/algo/adamw';
import { optimizerStep } from '../../../src/algo/grad_step';
import { tinyPreset } from '../../../src/model/config';
import { Qwen2 } from '../../../src/model/qwen2';
import { charTokenizer } from '../../../src/model/tokenizer';
import { initTestBackend } from '../../helpers/backend';

const tokenizer = charTokenizer();

before(async () => {
  await initTestBackend();
});

test('a non-finite loss skips the optimizer step and leaves the weights untouched', async () => {
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 3);
  const vars = model.trainableVariables();
  const before = (vars.get('model.norm.weight') as tf.Variable).arraySync();
  const optimizer = new AdamW({});
  const res = await optimizerStep({
    vars,
    optimizer,
    lr: 1e-2,
    maxGradNorm: 1,
    lossFns: [
      { rows: 1, tokens: 1, loss: () => tf.mul(tf.sum(vars.get('model.norm.weight') as tf.Variable), tf.scalar(Number.NaN)) as tf.Scalar },
    ],
  });
  assert.equal(res.applied, false);
  assert.deepEqual((vars.get('model.norm.weight') as tf.Variable).arraySync(), before);
  model.dispose();
});
