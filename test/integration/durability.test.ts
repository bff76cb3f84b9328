/**
 * Durable runs through the real Temporal and S3 servers with worker processes: a 3-step
 * FrozenLake run is the reference; then runs of the same config and seed that are disturbed (every
 * worker kind and both servers SIGKILLed and restarted, the update worker SIGTERMed mid-update, the
 * run terminated and its latest checkpoint corrupted before `starpo resume`, a checkpoint corrupted
 * under a paused run) must end with the reference's final checkpoint, bit for bit.
 */

import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { endpointsToEnv } from '../../infra/env';
import { spawnWorker, stopChild } from '../../src/cli/spawn_workers';
import { resume } from '../../src/cli/train';
import type { StarpoRunResult } from '../../src/contract';
import {
  CHECKPOINT_CORRUPT_ERROR,
  type Progress,
  pauseUpdate,
  progressQuery,
  TASK_QUEUES,
  unpauseUpdate,
  WORKFLOW_TYPE,
} from '../../src/contract';
import { readCompleteBefore, readLatest } from '../../src/storage/checkpoint';
import { checkpointPrefix, metricsKey } from '../../src/storage/keys';
import { sha256Hex } from '../../src/storage/object_store';
import { CrashableStack, checkpointFingerprint, FAULT_TARGETS, type Fault, runWithFaults, shortRunInput } from '../helpers/faults';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();
const STEPS = 3;
/** The undisturbed run: its final checkpoint's fingerprint and its metrics. */
let reference: {
  fingerprint: Awaited<ReturnType<typeof checkpointFingerprint>>;
  metrics: Array<Record<string, number>>;
};

/** Starts a 3-step run (shortRunInput) and returns its id. */
async function startRun(name: string): Promise<string> {
  const input = shortRunInput(`it-${name}-${Date.now()}`, STEPS);
  await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: input.runId, args: [input] });
  return input.runId;
}

/** Polls the run's `progress` query every 100 ms until `done` holds. */
async function waitForProgress(runId: string, done: (p: Progress) => boolean): Promise<void> {
  const handle = stack.client.workflow.getHandle(runId);
  for (;;) {
    const p = await handle.query(progressQuery).catch(() => null);
    if (p && done(p)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The last lines of the newest log of a worker role in the stack's log folder, for failure messages. */
function logTail(role: string, lines = 40): string {
  const logs = readdirSync(stack.logDir)
    .filter((f) => f.startsWith(role) && f.endsWith('.log'))
    .map((f) => join(stack.logDir, f));
  const newest = logs.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  return newest ? readFileSync(newest, 'utf8').split('\n').slice(-lines).join('\n') : '(no log)';
}

/** Corrupts a stored object in place: one flipped byte, same length. */
async function flipByte(key: string): Promise<void> {
  const bytes = await stack.store.getUnverified(key);
  bytes[bytes.length >> 1] ^= 0xff;
  await stack.store.put(key, bytes);
}

/**
 * Every step's metrics but wall times (time/*) and the warm-up's facts (warmup/*: the first run trains it,
 * later ones reuse it): what must repeat exactly for the same config, seed and backend.
 */
async function repeatableMetrics(runId: string): Promise<Array<Record<string, number>>> {
  const out: Array<Record<string, number>> = [];
  for (let step = 0; step < STEPS; step++) {
    const { metrics } = (await stack.store.getJson(metricsKey(runId, step))) as { metrics: Record<string, number> };
    out.push(Object.fromEntries(Object.entries(metrics).filter(([k]) => !k.startsWith('time/') && !k.startsWith('warmup/'))));
  }
  return out;
}

const fingerprintOf = async (runId: string) => {
  const result: StarpoRunResult = await stack.client.workflow.getHandle(runId).result();
  assert.equal(result.steps, STEPS);
  return checkpointFingerprint(stack.store, result.finalCheckpoint);
};

test('the reference: an undisturbed run', async () => {
  const runId = await startRun('reference');
  const fingerprint = await fingerprintOf(runId);
  reference = { fingerprint, metrics: await repeatableMetrics(runId) };
  const warmup = await readCompleteBefore(stack.store, runId, 1); // the step-0 checkpoint (initial.json)
  assert.equal(warmup?.step, 0);
  assert.notEqual(sha256Hex(warmup.files['model.safetensors'] as Uint8Array), fingerprint.model, 'the updates moved the weights');
});

test('SIGKILL of the rollout, update and control workers and of the Temporal and S3 servers, each restarted: the reference weights', async () => {
  const crashable = new CrashableStack(stack.servers, stack.workers, stack.logDir);
  // Each target once, at a point of the run where it is busy; by phase, not by time, so a fast host
  // cannot finish the run before the last kill.
  const plan: Fault[] = [
    { target: 'rollout', step: 0, phase: 'rollout', downSeconds: 1 },
    { target: 'update', step: 0, phase: 'update', downSeconds: 1 },
    { target: 'control', step: 1, phase: 'rollout', downSeconds: 1 },
    { target: 'temporal', step: 1, phase: 'update', downSeconds: 2 },
    { target: 's3', step: 2, phase: 'rollout', downSeconds: 2 },
  ];
  const { result, kills } = await runWithFaults<StarpoRunResult>(stack.client, await startRun('faults'), crashable, plan);
  assert.deepEqual(
    kills.map((k) => k.target).sort(),
    [...FAULT_TARGETS].sort(),
    `every target was killed while the run was open: ${JSON.stringify(kills)}`,
  );
  assert.deepEqual(await checkpointFingerprint(stack.store, result.finalCheckpoint), reference.fingerprint);
  assert.deepEqual(await repeatableMetrics(result.runId), reference.metrics, 'the same metrics, step by step');
});

test('SIGTERM to the update worker mid-update: the update finishes within the grace time, the worker exits, a new one carries on', async () => {
  const runId = await startRun('sigterm');
  const handle = stack.client.workflow.getHandle(runId);
  let activityId: string | undefined;
  while (!activityId) {
    const pending = (await handle.describe()).raw.pendingActivities ?? [];
    activityId = pending.find((p) => p.activityType?.name === 'update' && Number(p.state) === 2)?.activityId ?? undefined;
    if (!activityId) await new Promise((r) => setTimeout(r, 100));
  }
  const entry = stack.workers.children.find((c) => c.role === 'update')!;
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    entry.child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  await stopChild(entry.child, 60); // SIGTERM; SIGKILL only after 60 s
  assert.deepEqual(await exited, { code: 0, signal: null }, `the worker shut down by itself; its log ends:\n${logTail('update')}`);
  const history = (await handle.fetchHistory()).events ?? [];
  const scheduled = history.find((e) => e.activityTaskScheduledEventAttributes?.activityId === activityId)!;
  const completed = history.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled.eventId));
  assert.ok(completed, 'the update running at SIGTERM completed before the worker exited');
  entry.child = spawnWorker('update', stack.servers.endpoints, stack.logDir, '-after-sigterm');
  assert.deepEqual(await fingerprintOf(runId), reference.fingerprint);
  assert.deepEqual(await repeatableMetrics(runId), reference.metrics, 'the same metrics, step by step');
});

test('a run terminated mid-way whose latest checkpoint is corrupted: `starpo resume` falls back to the previous one and ends with the reference weights', async () => {
  const runId = await startRun('resume');
  const handle = stack.client.workflow.getHandle(runId);
  // Terminate while step 2 rolls out: checkpoint 2 is the latest and no update is running.
  await waitForProgress(runId, (p) => p.step === 2 && p.phase === 'rollout');
  await handle.terminate('durability test');
  assert.equal((await readLatest(stack.store, runId))?.step, 2);
  const modelKey = `${checkpointPrefix(runId, 2)}model.safetensors`;
  await flipByte(modelKey);

  const lines: string[] = [];
  const env = endpointsToEnv(stack.servers.endpoints); // resume finds the servers through the environment
  Object.assign(process.env, env);
  try {
    await resume(runId, { workers: false, rolloutWorkers: 1, log: (line) => lines.push(line) });
  } finally {
    for (const name of Object.keys(env)) delete process.env[name];
  }
  assert.ok(
    lines.some((l) => l.includes(modelKey) && l.includes('sha256 mismatch')),
    lines.join('\n'),
  );
  assert.ok(
    lines.some((l) => /using checkpoint step 1 /.test(l)),
    lines.join('\n'),
  );
  assert.deepEqual(await fingerprintOf(runId), reference.fingerprint);
});

test('a run terminated and resumed keeps the validation curve of its first execution in its result and summary', async () => {
  const input = shortRunInput(`it-curve-${Date.now()}`, STEPS);
  input.config.eval_steps = 1;
  await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: input.runId, args: [input] });
  // Terminate once step 2's validation is recorded: steps 0, 1 and 2 were evaluated by the first execution.
  await waitForProgress(input.runId, (p) => p.step === 2 && p.phase === 'rollout');
  const first = (await stack.client.workflow.getHandle(input.runId).query(progressQuery)).validationCurve;
  assert.deepEqual(
    first.map((v) => v.step),
    [0, 1, 2],
  );
  const lines: string[] = [];
  const env = endpointsToEnv(stack.servers.endpoints);
  Object.assign(process.env, env);
  try {
    // following the running run (resume attaches), then terminated: one error saying so, with the reason
    let attached!: () => void;
    const following = resume(input.runId, {
      workers: false,
      rolloutWorkers: 1,
      log: (line) => line.includes('is running; attaching') && attached(),
    });
    await new Promise<void>((r) => (attached = r));
    await stack.client.workflow.getHandle(input.runId).terminate('durability test');
    await assert.rejects(following, {
      name: 'RunEndedError',
      message: `run ${input.runId} was terminated (durability test); continue it from its latest checkpoint with:  starpo resume ${input.runId}`,
    });
    await resume(input.runId, { workers: false, rolloutWorkers: 1, log: (line) => lines.push(line) });
  } finally {
    for (const name of Object.keys(env)) delete process.env[name];
  }
  const result: StarpoRunResult = await stack.client.workflow.getHandle(input.runId).result();
  // resumed from checkpoint 2: step 2 is evaluated again (same policy, same states), then 3 at the end
  assert.deepEqual(
    result.validationCurve.map((v) => v.step),
    [0, 1, 2, 3],
  );
  assert.deepEqual(result.validationCurve.slice(0, 2), first.slice(0, 2));
  assert.ok(
    lines.some((l) => l.startsWith('validation success by step: 0: ')),
    lines.join('\n'),
  );
  // the end says how long the command took and what to do next
  assert.ok(
    lines.some((l) => new RegExp(`^run ${input.runId} finished: 3 steps, \\d+ s for this command; final checkpoint `).test(l)),
    lines.join('\n'),
  );
  assert.ok(lines.includes(`next: npx starpo report ${input.runId}   (one HTML file: curves, validation, trajectories)`), lines.join('\n'));
  assert.ok(
    lines.includes(`steps 0-2 hold the rollouts (npx starpo trajectories ${input.runId} --step 2); checkpoint step 3 is the final policy`),
    lines.join('\n'),
  );
});

test('a corrupted checkpoint found by a running step: the run replays from the previous checkpoint and ends with the reference weights', async () => {
  const runId = await startRun('replay');
  const handle = stack.client.workflow.getHandle(runId);
  // Pause during step 1's update: the run waits before step 2, whose policy is checkpoint 2.
  await waitForProgress(runId, (p) => p.step === 1 && p.phase === 'update');
  await handle.executeUpdate(pauseUpdate);
  await waitForProgress(runId, (p) => p.phase === 'paused');
  assert.equal((await readLatest(stack.store, runId))?.step, 2);
  const modelKey = `${checkpointPrefix(runId, 2)}model.safetensors`;
  await flipByte(modelKey);
  // New activity workers: no cached copy of the checkpoint, so the next step reads the damaged one.
  const crashable = new CrashableStack(stack.servers, stack.workers, stack.logDir);
  for (const role of ['rollout', 'update'] as const) {
    await crashable.crash(role);
    await crashable.restart(role);
  }
  await handle.executeUpdate(unpauseUpdate);
  assert.deepEqual(await fingerprintOf(runId), reference.fingerprint);
  const failures = ((await handle.fetchHistory()).events ?? []).map((e) => e.activityTaskFailedEventAttributes?.failure);
  const corrupt = failures.find((f) => f?.applicationFailureInfo?.type === CHECKPOINT_CORRUPT_ERROR);
  assert.ok(corrupt, 'an activity reported the damaged checkpoint');
  assert.match(String(corrupt.message), new RegExp(`${modelKey}.*sha256 mismatch.*continues from step 1`));
});
