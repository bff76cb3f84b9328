/**
 * Deterministic steps: one StarPO update from the same weights, trajectories and seed
 * gives bit-identical weights and optimizer state, on the wasm and on the cpu backend, or on native
 * TensorFlow in the native suite's run (each compared with itself: backends round differently, so
 * cross-backend equality is not expected); and
 * an update resumed from a checkpoint's bytes (model.safetensors, optimizer.safetensors) equals the
 * update continued in memory, which is what makes a resumed run equal the undisturbed one.
 */

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { AdamW } from '../../../src/algo/adamw';
import { klControllerFromConfig } from '../../../src/algo/kl';
import { ppoUpdate } from '../../../src/algo/update';
import type { Trajectory } from '../../../src/contract';
import { initBackend } from '../../../src/model/backend';
import { tinyPreset } from '../../../src/model/config';
import { modelFromSafetensors, modelToSafetensors } from '../../../src/model/hf/weights';
import { Qwen2 } from '../../../src/model/qwen2';
import { charTokenizer } from '../../../src/model/tokenizer';
import { formatDemonstrations } from '../../../src/rollout/demonstrations';
import { sha256Hex } from '../../../src/storage/object_store';
import { initTestBackend, TEST_BACKEND } from '../../helpers/backend';
import { fixtureConfig } from '../../helpers/fixture';

const tokenizer = charTokenizer();
// Two epochs of two minibatches: seeded shuffles (seed, step, epoch) and four optimizer steps per update.
const config = fixtureConfig({
  ppo_epochs: 2,
  actor_train: { training_args: { per_device_train_batch_size: 4, gradient_accumulation_steps: 1, learning_rate: 1e-3 } },
});
let batch: Trajectory[] = [];

before(async () => {
  await initTestBackend();
  const demos = await formatDemonstrations({ ...config, warmup: { ...config.warmup, num_episodes: 8 } }, tokenizer);
  batch = demos.map((t, i) => ({ ...t, trajGroupId: `FrozenLake_${Math.floor(i / 4)}_0_1`, episodeScore: (i % 4) * 0.25 }));
});

/** One update of pipeline step `step` on `trajectories`, in place (model and optimizer change). */
async function updateOnce(model: Qwen2, optimizer: AdamW, step: number, trajectories = batch): Promise<void> {
  await ppoUpdate({
    actor: { model, optimizer, lr: () => 1e-3 },
    klController: klControllerFromConfig(config),
    trajectories,
    config,
    step,
    padId: tokenizer.padId,
  });
}

/** The two shortest trajectories as one group with different scores. */
function shortPair(): Trajectory[] {
  const [a, b] = [...batch].sort((x, y) => x.inputIds.length - y.inputIds.length);
  return [
    { ...a, trajGroupId: 'short' },
    { ...b, trajGroupId: 'short', episodeScore: a.episodeScore + 1 },
  ];
}

/** sha256 of the checkpoint files an update produces: model.safetensors and optimizer.safetensors. */
async function digest(model: Qwen2, optimizer: AdamW): Promise<string> {
  return `${sha256Hex(await modelToSafetensors(model))}/${sha256Hex(await optimizer.toSafetensors())}`;
}

// The wasm run also checks the pure-JS cpu backend; a native run (STARPO_BACKEND) checks only its own.
for (const backend of TEST_BACKEND === 'wasm' ? ['wasm', 'cpu'] : [TEST_BACKEND]) {
  test(`${backend}: the same update twice gives bit-identical weights and optimizer state`, async () => {
    assert.equal(await initBackend(backend), backend);
    const digests: string[] = [];
    for (let i = 0; i < 2; i++) {
      const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 11);
      const optimizer = new AdamW({});
      await updateOnce(model, optimizer, 0, shortPair()); // the pure-JS cpu backend is ~20x slower than wasm
      digests.push(await digest(model, optimizer));
      model.dispose();
      optimizer.dispose();
    }
    assert.equal(digests[0], digests[1]);
  });
}

test('an update resumed from checkpoint bytes equals the one continued in memory', async () => {
  await initTestBackend();
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 12);
  const optimizer = new AdamW({});
  await updateOnce(model, optimizer, 0);
  const saved = { model: await modelToSafetensors(model), optimizer: await optimizer.toSafetensors() };
  await updateOnce(model, optimizer, 1);

  const resumedModel = modelFromSafetensors(model.config, saved.model);
  const resumedOptimizer = AdamW.fromSafetensors(saved.optimizer);
  await updateOnce(resumedModel, resumedOptimizer, 1);
  assert.equal(await digest(resumedModel, resumedOptimizer), await digest(model, optimizer));
  for (const m of [model, resumedModel]) m.dispose();
  for (const o of [optimizer, resumedOptimizer]) o.dispose();
});
