/**
 * ROLL's FrozenLake example (Hydra defaults + interpolation; StarPO doc values:
 * reinforce, traj_group_id/mean, whitening, advantage_clip 0.2), a StarPO-S config (gae critic, filter
 * 0.25, clip-higher, no KL) and a GRPO config with a k3 KL loss each train 2 steps with the tiny model
 * through the real Temporal and S3 servers, with workers as separate processes. Sizes are shrunk with
 * Hydra-style overrides so the three runs fit in CI time; the algorithm keys are the files' own.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { runInputFromFile } from '../../src/cli/run_input';
import type { StarpoRunResult } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { readCheckpoint, readOptimizerFiles } from '../../src/storage/checkpoint';
import { checkpointPrefix, metricsKey } from '../../src/storage/keys';
import { trainerStateOf } from '../../src/storage/policy_checkpoint';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();

/** 2 steps, 4 train groups x 4, 8 validation maps, a 4-step warm-up, 4-turn episodes. */
const SMALL = [
  'max_steps=2',
  'eval_steps=2',
  'rollout_batch_size=16',
  'val_batch_size=8',
  'sequence_length=400',
  'train_env_manager.num_env_groups=4',
  'train_env_manager.group_size=4',
  'train_env_manager.num_groups_partition=[4]',
  'train_env_manager.max_env_num_per_worker=8',
  'val_env_manager.num_env_groups=8',
  'val_env_manager.num_groups_partition=[8]',
  'val_env_manager.max_env_num_per_worker=8',
  'actor_train.training_args.per_device_train_batch_size=8',
  'actor_train.training_args.gradient_accumulation_steps=2',
  '++warmup.num_episodes=16',
  '++warmup.train_steps=4',
  '++warmup.batch_size=8',
];

/** Runs a config file to completion with SMALL (+ extra) overrides; returns the result and each step's metrics. */
async function train(
  file: string,
  extra: string[],
): Promise<{ result: StarpoRunResult; runId: string; steps: Array<Record<string, number>> }> {
  const runId = `it-algo-${file.replace(/\W+/g, '-')}-${Date.now()}`;
  const { input } = runInputFromFile(file, runId, [...SMALL, ...extra]);
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: runId, args: [input] });
  const result: StarpoRunResult = await handle.result();
  const steps = [];
  for (const step of [0, 1])
    steps.push(((await stack.store.getJson(metricsKey(runId, step))) as { metrics: Record<string, number> }).metrics);
  return { result, runId, steps };
}

const finite = (m: Record<string, number>, keys: string[]) => keys.forEach((k) => assert.ok(Number.isFinite(m[k]), `${k} = ${m[k]}`));

test("ROLL's agent_val_frozen_lake example (Hydra file, StarPO doc values) trains", async () => {
  // The example's own track_with: tensorboard, into a temporary folder instead of the example's ./output
  const tensorboard = mkdtempSync(join(tmpdir(), 'starpo-algo-tb-'));
  after(() => rmSync(tensorboard, { recursive: true, force: true }));
  const { result, runId, steps } = await train('configs/examples/agent_val_frozen_lake.yaml', [
    'max_actions_per_traj=4',
    `tracker_kwargs.log_dir=${tensorboard}`,
  ]);
  assert.equal(result.steps, 2);
  assert.equal(readdirSync(join(tensorboard, runId)).filter((n) => n.includes('tfevents')).length, 1, 'its event file');
  for (const m of steps) {
    finite(m, ['actor/pg_loss', 'actor/grad_norm', 'actor/entropy', 'critic/advantage_clip_frac', 'rollout/in_group_std']);
    // whitened, then clipped to advantage_clip 0.2
    assert.ok(m['critic/advantages/max'] <= 0.2 + 1e-9 && m['critic/advantages/min'] >= -0.2 - 1e-9);
    assert.equal(m['actor/optimizer_steps'], 1);
  }
  assert.ok(result.validationCurve.length === 2, 'validation at step 0 and at the end');
});

test('a StarPO-S config (gae critic, filter 0.25, clip-higher, no KL) trains and checkpoints its critic', async () => {
  const { result, runId, steps } = await train('configs/starpo_s_frozen_lake.yaml', []);
  assert.equal(result.steps, 2);
  for (const m of steps) {
    assert.equal(m['rollout/kept_groups'], 1, 'floor(0.25 * 4 groups)');
    finite(m, ['critic/loss', 'critic/grad_norm', 'critic/values/mean', 'actor/ppo_ratio_high_clipfrac']);
    assert.equal(m['critic/optimizer_steps'], 1);
  }
  const { files } = await readCheckpoint(stack.store, await stack.store.refOf(`${checkpointPrefix(runId, 2)}manifest.json`));
  const optimizer = await readOptimizerFiles(stack.store, `${checkpointPrefix(runId, 2)}manifest.json`);
  assert.ok(files['critic.safetensors'] && optimizer['critic_optimizer.safetensors'], 'critic and its optimizer are checkpointed');
});

test('a GRPO config with a k3 KL loss trains against the step-0 policy as reference', async () => {
  const { result, runId, steps } = await train('configs/grpo_kl_frozen_lake.yaml', []);
  assert.equal(result.steps, 2);
  finite(steps[0], ['actor/kl_loss', 'critic/kl']);
  assert.equal(steps[0]['actor/kl_loss'], 0, 'step 0: the policy is the reference');
  assert.ok(steps[1]['actor/kl_loss'] > 0, 'step 1: the policy has moved away from it');
  const { files } = await readCheckpoint(stack.store, await stack.store.refOf(`${checkpointPrefix(runId, 2)}manifest.json`));
  const state = trainerStateOf(files);
  assert.match(state.reference?.key ?? '', /^warmup\/[0-9a-f]+\/manifest\.json$/, 'the reference is the step-0 (warm-up) checkpoint');
});

test('collapse_guard with action stop ends the run after `patience` low steps', async () => {
  const runId = `it-algo-guard-${Date.now()}`;
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', runId, [
    'max_steps=4',
    'eval_steps=0',
    '+collapse_guard={enabled: true, min_in_group_std: 100, min_entropy: 100, patience: 2, action: stop}',
  ]);
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: runId, args: [input] });
  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, 2, 'stopped after 2 of 4 steps');
  assert.match(result.stoppedBy ?? '', /collapse_guard: rollout\/in_group_std .* for 2 consecutive steps/);
  const memo = (await handle.describe()).memo as Record<string, string>;
  assert.match(memo.collapseAlert, /^step 1: collapse_guard/);
  const m = ((await stack.store.getJson(metricsKey(runId, 1))) as { metrics: Record<string, number> }).metrics;
  assert.equal(m['collapse/fired'], 1);
});
