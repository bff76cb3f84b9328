/**
 * The warm-up's SFT follows warmup.lr_scheduler_type: two steps under `linear` over 2 steps equal one step at
 * the full rate then one at half of it, with the same optimizer (each step sees the whole batch, so the two
 * runs see the same data).
 */

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { AdamW } from '../../../src/algo/adamw';
import { sftTrain, warmupSchedule } from '../../../src/algo/sft';
import type { Trajectory } from '../../../src/contract';
import { tinyPreset } from '../../../src/model/config';
import { modelToSafetensors } from '../../../src/model/hf/weights';
import { Qwen2 } from '../../../src/model/qwen2';
import { charTokenizer } from '../../../src/model/tokenizer';
import { sha256Hex } from '../../../src/storage/object_store';
import { fixtureConfig, fixtureDemos } from '../../helpers/fixture';

const tokenizer = charTokenizer();
const config = fixtureConfig({ warmup: { learning_rate: 1e-3 } });
let demos: Trajectory[] = [];

before(async () => {
  demos = await fixtureDemos(4);
});

async function train(
  model: Qwen2,
  optimizer: AdamW,
  steps: number,
  lr: Parameters<typeof sftTrain>[0]['lr'],
  gradientCheckpointing = false,
): Promise<void> {
  await sftTrain({
    model,
    optimizer,
    trajectories: demos,
    steps,
    batchSize: demos.length,
    microBatchSize: 2,
    gradientCheckpointing,
    lr,
    maxGradNorm: 1,
    seed: 1,
    padId: tokenizer.padId,
  });
}

test('warmupSchedule maps the warm-up keys: constant by default, the schedule over train_steps', () => {
  assert.deepEqual(warmupSchedule(config.warmup), { base: 1e-3, type: 'constant', warmupSteps: 0, totalSteps: config.warmup.train_steps });
  const linear = fixtureConfig({ warmup: { lr_scheduler_type: 'linear', train_steps: 2 } }).warmup;
  assert.deepEqual(warmupSchedule(linear), { base: linear.learning_rate, type: 'linear', warmupSteps: 0, totalSteps: 2 });
});

test('SFT under a linear schedule takes the scheduled rate at each step', async () => {
  const scheduled = Qwen2.random(tinyPreset(tokenizer.vocabSize), 5);
  const a = new AdamW({});
  await train(scheduled, a, 2, { base: 1e-3, type: 'linear', warmupSteps: 0, totalSteps: 2 });

  const byHand = Qwen2.random(tinyPreset(tokenizer.vocabSize), 5);
  const b = new AdamW({});
  await train(byHand, b, 1, { base: 1e-3, type: 'constant', warmupSteps: 0, totalSteps: 1 });
  await train(byHand, b, 1, { base: 5e-4, type: 'constant', warmupSteps: 0, totalSteps: 1 });

  const constant = Qwen2.random(tinyPreset(tokenizer.vocabSize), 5);
  const c = new AdamW({});
  await train(constant, c, 2, { base: 1e-3, type: 'constant', warmupSteps: 0, totalSteps: 2 });

  const [s, h, k] = await Promise.all([scheduled, byHand, constant].map(async (m) => sha256Hex(await modelToSafetensors(m))));
  assert.equal(s, h);
  assert.notEqual(s, k);
  for (const x of [scheduled, byHand, constant]) x.dispose();
  for (const o of [a, b, c]) o.dispose();
});

test('SFT with gradient checkpointing trains to the same weights', async () => {
  const lr = { base: 1e-3, type: 'constant', warmupSteps: 0, totalSteps: 2 } as const;
  const [plain, recomputed] = [false, true].map(() => Qwen2.random(tinyPreset(tokenizer.vocabSize), 5));
  const [a, b] = [new AdamW({}), new AdamW({})];
  await train(plain, a, 2, lr, false);
  await train(recomputed, b, 2, lr, true);
  const [p, r] = await Promise.all([plain, recomputed].map(async (m) => sha256Hex(await modelToSafetensors(m))));
  assert.equal(p, r);
  for (const x of [plain, recomputed]) x.dispose();
  for (const o of [a, b]) o.dispose();
});
