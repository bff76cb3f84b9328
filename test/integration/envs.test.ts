/**
 * Through the real Temporal and S3 servers with workers as separate processes:
 * a run mixing FrozenLake and SimpleSokoban trains 2 steps and its validation reports each tag on
 * new states at every evaluation; a run with a `chaos` tag whose env throws survives (the failure is
 * in the metrics and the worker log, the group replaced), and one where every env throws fails with
 * a clear reason; a `warmup: solver` run reports its warm start, on a tiny model resized by `config_overrides`.
 */

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runInputFromFile } from '../../src/cli/run_input';
import type { StarpoRunResult, Trajectory } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { planShards } from '../../src/rollout/plan';
import { readCheckpoint } from '../../src/storage/checkpoint';
import { metricsKey, rolloutKey } from '../../src/storage/keys';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();

/** 2 steps, 4 train groups x 4, 8 validation states, a 4-step warm-up on 16 episodes. */
const SMALL = [
  'max_steps=2',
  'eval_steps=2',
  'rollout_batch_size=16',
  'val_batch_size=8',
  'train_env_manager.num_env_groups=4',
  'train_env_manager.group_size=4',
  'train_env_manager.max_env_num_per_worker=8',
  'val_env_manager.num_env_groups=8',
  'val_env_manager.max_env_num_per_worker=4',
  'actor_train.training_args.per_device_train_batch_size=8',
  'actor_train.training_args.gradient_accumulation_steps=2',
  'warmup.num_episodes=16',
  'warmup.train_steps=4',
  'warmup.batch_size=8',
];

/** Runs a config to completion; returns the run id, the result and each step's metrics. */
async function train(file: string, name: string, overrides: string[]) {
  const runId = `it-envs-${name}-${Date.now()}`;
  const { input } = runInputFromFile(file, runId, overrides);
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: runId, args: [input] });
  const result: StarpoRunResult = await handle.result();
  const steps: Array<Record<string, number>> = [];
  for (const step of [0, 1])
    steps.push(((await stack.store.getJson(metricsKey(runId, step))) as { metrics: Record<string, number> }).metrics);
  return { runId, result, steps, config: input.config };
}

const inUnit = (m: Record<string, number>, key: string) => assert.ok(m[key] >= 0 && m[key] <= 1, `${key} = ${m[key]}`);

test('FrozenLake + SimpleSokoban train 2 steps; validation reports each tag on new states per evaluation', async () => {
  const { runId, result, steps } = await train('configs/mixed_frozen_lake_sokoban.yaml', 'mixed', [
    ...SMALL,
    'train_env_manager.num_groups_partition=[2,2]',
    'val_env_manager.num_groups_partition=[4,4]',
    'custom_envs.FrozenLake.max_steps=4',
    'custom_envs.SimpleSokoban.max_steps=4',
  ]);
  assert.equal(result.steps, 2);
  assert.deepEqual(
    result.validationCurve.map((p) => p.step),
    [0, 2],
  );
  for (const tag of ['FrozenLake', 'SimpleSokoban']) {
    inUnit(steps[0], `val/env/${tag}/success`);
    inUnit(steps[1], `env/${tag}/success`);
    assert.ok(Number.isFinite(steps[0][`val/${tag}/score`]), `val/${tag}/score`);
    inUnit(result.lastValidation!.metrics, `val/env/${tag}/success`);
  }
  assert.ok(Number.isFinite(steps[0]['val/score']));
  assert.equal(steps[0]['warmup/type_format'], 1, "the warm start is in the first step's metrics");
  assert.equal(steps[0]['env/failed_episodes'], 0);
  // validation at steps 0 and 2 played different states (val_env_manager.fixed_states is off)
  const valSeeds = async (step: number) => {
    const shards = await Promise.all([0, 1].map((k) => stack.store.getJsonlGz<Trajectory>(rolloutKey(runId, step, 'val', k))));
    return shards.flat().map((t) => `${t.tag}:${t.seed}`);
  };
  const [at0, at2] = [await valSeeds(0), await valSeeds(2)];
  assert.equal(at0.filter((s) => s.startsWith('SimpleSokoban:')).length, 4);
  assert.ok(
    at0.every((s) => !at2.includes(s)),
    'new states at every evaluation',
  );
});

test('a chaos env that throws on step 3 of one episode in a batch of 64: the run completes, the failure is counted and logged, the group replaced', async () => {
  const fixture = 'test/fixtures/tiny_frozen_lake.yaml';
  const base = [
    'rollout_batch_size=64',
    'train_env_manager.num_env_groups=16',
    'train_env_manager.max_env_num_per_worker=32',
    'train_env_manager.tags=[FrozenLake,Chaos]',
    'train_env_manager.num_groups_partition=[8,8]',
  ];
  const chaosTag = (seeds: number[]) =>
    '+custom_envs.Chaos={env_type: chaos, max_steps: 4, max_tokens_per_step: 24, agent_system_template: "", ' +
    'agent_template: "{observation}", env_config: {inner_env_type: frozen_lake, inner_env_config: {size: 4, p: 0.8, is_slippery: false, ' +
    `format_penalty: -0.01}, throw_on_step: 3, env_ids: [40], seeds: [${seeds.join(',')}]}}`;
  // env 40 is the first member of group 10 (tag Chaos); it fails only in step 0's state of that group
  const planned = runInputFromFile(fixture, 'plan', [...base, chaosTag([0])]).input.config;
  const seed = planShards(planned, 'train', 0).flat()[10].seed;
  const { result, steps, runId } = await train(fixture, 'chaos', [...base, chaosTag([seed])]);
  assert.equal(result.steps, 2);
  assert.equal(steps[0]['env/failed_episodes'], 1);
  assert.equal(steps[0]['env/replaced_groups'], 1);
  assert.equal(steps[0]['env/dropped_groups'], 0);
  assert.equal(steps[1]['env/failed_episodes'], 0);
  assert.ok(Number.isFinite(steps[0]['actor/pg_loss']), 'the update ran on the complete batch');
  const stored = (await Promise.all([0, 1].map((k) => stack.store.getJsonlGz<Trajectory>(rolloutKey(runId, 0, 'train', k))))).flat();
  assert.equal(stored.length, 64);
  assert.ok(
    stored.filter((t) => t.groupId === 10).every((t) => t.seed !== seed),
    'group 10 was played from a fresh state',
  );
  const logs = readdirSync(stack.logDir)
    .filter((f) => f.startsWith('rollout'))
    .map((f) => readFileSync(join(stack.logDir, f), 'utf8'))
    .join('\n');
  assert.match(logs, new RegExp(`Chaos env 40 \\(group 10, seed ${seed}\\): step 3 threw: chaos: injected failure in step 3`));
});

test('when every group of a step fails, the run fails at once with a clear reason (no endless retries)', async () => {
  const runId = `it-envs-broken-${Date.now()}`;
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', runId, [
    'warmup.type=none',
    'eval_steps=0',
    'train_env_manager.tags=[Broken]',
    '+custom_envs.Broken={env_type: chaos, env_config: {inner_env_type: frozen_lake, throw_on_reset: true}}',
  ]);
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: runId, args: [input] });
  await assert.rejects(handle.result(), (err: Error) =>
    /step 0: every env group failed, replacements included/.test(String((err.cause as Error)?.message)),
  );
});

test('warmup: solver SFTs on BFS demonstrations and reports warmup/type_solver; config_overrides size the tiny model', async () => {
  const { result, steps } = await train('test/fixtures/tiny_frozen_lake.yaml', 'solver', [
    'warmup.type=solver',
    'eval_steps=0',
    'config_overrides.hidden_size=32',
    'config_overrides.num_hidden_layers=1',
  ]);
  assert.equal(result.steps, 2);
  const final = await readCheckpoint(stack.store, result.finalCheckpoint);
  const shape = JSON.parse(new TextDecoder().decode(final.files['config.json']));
  assert.deepEqual([shape.hidden_size, shape.num_hidden_layers, shape.intermediate_size], [32, 1, 192]);
  assert.equal(steps[0]['warmup/type_solver'], 1);
  assert.equal(steps[0]['warmup/episode_success'], 1, 'every solver demonstration reaches the goal');
  assert.equal(steps[1]['warmup/type_solver'], undefined, 'reported once, with the first step');
});
