/**
 * End to end through the real Temporal dev server and a real S3 server, with the control, rollout
 * and update workers as separate processes: a 2-step StarPO run on FrozenLake, its history and
 * stored objects; then a run whose update worker is SIGKILLed mid-update and restarted.
 */

import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { test } from 'node:test';
import { runInputFromFile } from '../../src/cli/run_input';
import { spawnWorker, stopChild } from '../../src/cli/spawn_workers';
import { refuseExistingRun } from '../../src/cli/train';
import type { RunSpec, StarpoRunResult, StepCompute, StepMetrics } from '../../src/contract';
import { progressQuery, TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { defaultBackend, hostBackends, requestedBackend } from '../../src/model/backend_choice';
import { readCheckpoint } from '../../src/storage/checkpoint';
import { CorruptObjectError } from '../../src/storage/errors';
import { checkpointPrefix, latestKey, metricsKey, rolloutKey } from '../../src/storage/keys';
import { disposeCheckpoint, loadCheckpoint, trainerStateOf } from '../../src/storage/policy_checkpoint';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();

function start(input: RunSpec) {
  return stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: input.runId, args: [input] });
}

/** Activity type and attempt of every ActivityTaskStarted event, in order. */
async function startedActivities(runId: string): Promise<Array<{ type: string; attempt: number }>> {
  const history = await stack.client.workflow.getHandle(runId).fetchHistory();
  const scheduled = new Map<string, string>();
  const out: Array<{ type: string; attempt: number }> = [];
  for (const e of history.events ?? []) {
    if (e.activityTaskScheduledEventAttributes)
      scheduled.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
    const started = e.activityTaskStartedEventAttributes;
    if (started) out.push({ type: scheduled.get(String(started.scheduledEventId)) ?? '', attempt: started.attempt ?? 1 });
  }
  return out;
}

test('a 2-step StarPO run trains through Temporal and stores every step and a verified checkpoint', async () => {
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', `it-train-${Date.now()}`);
  const handle = await start(input);
  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, 2);
  assert.equal(result.finalCheckpoint.key, `${checkpointPrefix(input.runId, 2)}manifest.json`);

  const activities = await startedActivities(input.runId);
  const count = (type: string) => activities.filter((a) => a.type === type).length;
  assert.equal(count('prepareRun'), 1);
  assert.equal(count('update'), 2, 'one update activity per step');
  // 16 train envs, 8 per worker = 2 rollout activities per step; validation (8 envs, 1 shard) at steps 0 and 2
  assert.equal(count('rollout'), 2 * 2 + 2);

  // each role computes on its default for this host (or STARPO_BACKEND), and every step records it
  const expected = (role: 'rollout' | 'update') => ({
    backend: String(requestedBackend(process.env, defaultBackend(role, hostBackends()))),
    device: 'CPU',
  });
  const compute: StepCompute = { rollout: [expected('rollout')], update: expected('update') };
  for (const step of [0, 1]) {
    for (const shard of [0, 1])
      assert.ok(await stack.store.exists(rolloutKey(input.runId, step, 'train', shard)), `step ${step} shard ${shard}`);
    const m = (await stack.store.getJson(metricsKey(input.runId, step))) as StepMetrics;
    assert.ok(Number.isFinite(m.metrics['actor/pg_loss']), 'pg_loss recorded');
    assert.ok(m.metrics['env/FrozenLake/success'] >= 0 && m.metrics['env/FrozenLake/success'] <= 1);
    assert.deepEqual(m.compute, compute, `step ${step}: where the rollouts and the update computed`);
  }
  assert.ok(result.lastValidation && result.lastValidation.step === 2);
  assert.ok('val/env/FrozenLake/success' in result.lastValidation.metrics);

  const latest = (await stack.store.getJson(latestKey(input.runId))) as { step: number };
  assert.equal(latest.step, 2);
  const loaded = await loadCheckpoint(stack.store, result.finalCheckpoint, true);
  assert.equal(loaded.state.step, 2);
  assert.ok(loaded.optimizer, 'the checkpoint carries optimizer state');
  disposeCheckpoint(loaded);

  const progress = await handle.query(progressQuery);
  assert.equal(progress.phase, 'done');
  assert.equal(progress.step, 2);
  assert.deepEqual(progress.compute, compute);
  assert.deepEqual(loaded.state.compute, compute.update, 'the checkpoint says where its update computed');

  // the run id is taken: `starpo train --run-id` refuses it instead of overwriting the run's objects
  await assert.rejects(
    refuseExistingRun(stack.client, stack.store, input.runId),
    (err: Error) => err.name === 'ConfigError' && /already exists; continue it with `starpo resume/.test(err.message),
  );
  await refuseExistingRun(stack.client, stack.store, `${input.runId}-new`);

  // a tampered object is detected on read
  const modelKey = `${checkpointPrefix(input.runId, 2)}model.safetensors`;
  await stack.store.put(modelKey, new Uint8Array([1, 2, 3]));
  await assert.rejects(loadCheckpoint(stack.store, result.finalCheckpoint), CorruptObjectError);
});

test('killing the update worker during an update: the activity is retried and the same run finishes', async () => {
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', `it-crash-${Date.now()}`);
  input.config.max_steps = 4;
  input.config.eval_steps = 0;
  const handle = await start(input);
  const entry = stack.workers.children.find((c) => c.role === 'update') as { role: 'update'; child: ChildProcess };
  let updateWorker = entry.child;
  let killed = 0;
  // Poll the pending activities; SIGKILL the update worker whenever an update attempt is running,
  // until an update has been retried (an attempt that finishes before the kill lands does not count).
  for (;;) {
    const retried = (await startedActivities(input.runId)).some((a) => a.type === 'update' && a.attempt > 1);
    const description = await handle.describe();
    if (retried || description.status.name !== 'RUNNING') break;
    const pending = description.raw.pendingActivities ?? [];
    const runningUpdate = pending.some(
      (p) => p.activityType?.name === 'update' && Number(p.state) === 2 && (p.attempt ?? 1) === killed + 1,
    );
    if (runningUpdate && updateWorker.exitCode === null && killed < 3) {
      updateWorker.kill('SIGKILL');
      await stopChild(updateWorker, 5);
      killed += 1;
      updateWorker = spawnWorker('update', stack.servers.endpoints, stack.logDir);
      entry.child = updateWorker;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const result: StarpoRunResult = await handle.result();
  assert.ok(killed >= 1, 'the update worker was killed at least once');
  assert.equal(result.steps, 4);
  const updates = (await startedActivities(input.runId)).filter((a) => a.type === 'update');
  assert.ok(
    updates.some((a) => a.attempt > 1),
    'an update activity was retried on the new worker',
  );
  const loaded = await loadCheckpoint(stack.store, result.finalCheckpoint);
  assert.equal(loaded.state.step, 4);
  loaded.model.dispose();
  // the warm-up made for the first run was reused, not trained again, and reports what it cost when trained
  const warmups = (await stack.store.list('warmup/')).filter((o) => o.key.endsWith('manifest.json'));
  assert.equal(warmups.length, 1);
  const trained = trainerStateOf((await readCheckpoint(stack.store, warmups[0].key)).files).metrics;
  const first = ((await stack.store.getJson(metricsKey(input.runId, 0))) as StepMetrics).metrics;
  assert.equal(first['warmup/reused'], 1);
  assert.ok(trained['warmup/seconds'] > 0);
  assert.equal(first['warmup/seconds'], trained['warmup/seconds']);
  assert.equal(first['warmup/final_loss'], trained['warmup/final_loss']);
});

test('a workflow whose id differs from its runId fails at once instead of writing into another run', async () => {
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', `it-mismatch-${Date.now()}`);
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, {
    taskQueue: TASK_QUEUES.control,
    workflowId: `${input.runId}-other`,
    args: [input],
  });
  await assert.rejects(handle.result(), (err: Error) =>
    /must equal the workflow id/.test(String((err as { cause?: Error }).cause?.message)),
  );
  assert.equal(await stack.store.exists(`runs/${input.runId}/run.json`), false);
});
