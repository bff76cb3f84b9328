/**
 * `track_with: tensorboard` through the real Temporal and S3 servers and worker processes: the event files
 * the control worker writes, read back with the tensorboard package's own readers
 * (test/helpers/tensorboard_reader.ts), hold every metric of every stored metrics/step-N.json at its step,
 * once, and the config as text; also through a SIGKILL of the control worker and a terminate + `starpo
 * resume`; a tracker that fails does not fail the run, and `starpo track` then writes what it missed,
 * into the sweep's folder for a sweep's run.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { endpointsToEnv } from '../../infra/env';
import { STARPO_BIN } from '../../src/cli/spawn_workers';
import { resume } from '../../src/cli/train';
import type { RunSpec, StarpoRunResult, StepMetrics, SweepSpec } from '../../src/contract';
import { type Progress, progressQuery, TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { metricsKey, sweepKey } from '../../src/storage/keys';
import { listMetricSteps } from '../../src/storage/run_metrics';
import { CrashableStack, shortRunInput } from '../helpers/faults';
import { useTrainingStack } from '../helpers/stack';
import { type ReadRun, readLogDir } from '../helpers/tensorboard_reader';

const stack = useTrainingStack();
const logRoot = mkdtempSync(join(tmpdir(), 'starpo-tracker-it-'));
after(() => rmSync(logRoot, { recursive: true, force: true }));

/** A short run (validation every step, so val/ metrics and a final validation step) tracked into `logDir`. */
function trackedInput(runId: string, steps: number, logDir: string): RunSpec {
  const input = shortRunInput(runId, steps);
  input.config.eval_steps = 1;
  input.config.track_with = 'tensorboard';
  input.config.tracker_kwargs = { log_dir: logDir };
  return input;
}

async function start(input: RunSpec): Promise<void> {
  await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: input.runId, args: [input] });
}

/**
 * Asserts that TensorBoard reads exactly the stored steps of `runId` from `run`: one summary event per
 * stored step, in order, each with every metric of metrics/step-N.json (as float32, TensorBoard's
 * simple_value), and the config text once. @returns the number of steps
 */
async function assertSameAsStore(runId: string, run: ReadRun | undefined): Promise<number> {
  assert.ok(run, `TensorBoard found no run folder for ${runId}`);
  const stored = await listMetricSteps(stack.store, runId);
  const scalarEvents = run.events.filter((e) => e.what === 'summary' && !e.texts?.config);
  assert.deepEqual(
    scalarEvents.map((e) => e.step),
    stored.map((s) => s.step),
    'one event per stored step: no duplicates, no gaps',
  );
  for (const e of scalarEvents) {
    const { metrics } = await stack.store.getJson<StepMetrics>(metricsKey(runId, e.step));
    assert.deepEqual(e.scalars, Object.fromEntries(Object.entries(metrics).map(([k, v]) => [k, Math.fround(v)])), `step ${e.step}`);
  }
  const configs = run.events.filter((e) => e.texts?.config !== undefined);
  assert.equal(configs.length, 1);
  assert.match(configs[0]?.texts?.config ?? '', new RegExp(`runId: ${runId}`));
  assert.deepEqual(run.text_tags, ['config']);
  return stored.length;
}

test('track_with tensorboard: TensorBoard reads every metric of every metrics/step-N.json at its step, once, and the config', async () => {
  const logDir = join(logRoot, 'plain');
  const input = trackedInput(`it-tb-${Date.now()}`, 2, logDir);
  await start(input);
  const result: StarpoRunResult = await stack.client.workflow.getHandle(input.runId).result();
  assert.equal(result.steps, 2);
  const runs = readLogDir(logDir);
  assert.deepEqual(Object.keys(runs), [input.runId]);
  // steps 0 and 1, and step 2: the final validation's val/ metrics
  assert.equal(await assertSameAsStore(input.runId, runs[input.runId]), 3);
  const served = runs[input.runId]?.served_scalars ?? {};
  assert.ok(
    served['env/FrozenLake/success'] && served['val/env/FrozenLake/success'] && served['time/step'],
    Object.keys(served).join(', '),
  );
});

test('SIGKILL of the control worker, then the run terminated and resumed: every step once, none missing', async () => {
  const logDir = join(logRoot, 'faults');
  const input = trackedInput(`it-tb-faults-${Date.now()}`, 4, logDir);
  await start(input);
  const crashable = new CrashableStack(stack.servers, stack.workers, stack.logDir);
  const handle = stack.client.workflow.getHandle(input.runId);
  /** Polls the run's progress until it is at or past `step`'s `phase`. */
  const reach = async (step: number, phase: 'rollout' | 'update') => {
    for (;;) {
      const p: Progress | null = await handle.query(progressQuery).catch(() => null);
      if (p && (p.step > step || (p.step === step && (p.phase === phase || phase === 'rollout')))) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  // The control worker SIGKILLed right after step 0's metrics (while their track call runs) and in step 2's update.
  for (const [step, phase] of [
    [1, 'rollout'],
    [2, 'update'],
  ] as const) {
    await reach(step, phase);
    await crashable.crash('control');
    await new Promise((r) => setTimeout(r, 1000));
    await crashable.restart('control');
  }
  // Terminated once step 3 plays, then `starpo resume`: a new execution from checkpoint 3.
  await reach(3, 'rollout');
  await handle.terminate('trackers test');
  const env = endpointsToEnv(stack.servers.endpoints);
  Object.assign(process.env, env);
  try {
    await resume(input.runId, { workers: false, rolloutWorkers: 1, log: () => undefined });
  } finally {
    for (const name of Object.keys(env)) delete process.env[name];
  }
  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, 4);
  assert.equal(await assertSameAsStore(input.runId, readLogDir(logDir)[input.runId]), 5);
});

test('a tracker that fails does not fail the run; `starpo track` then writes every step, into the sweep folder of a sweep run', async () => {
  const blocker = join(logRoot, 'a-file');
  writeFileSync(blocker, 'not a folder');
  const sweepId = `it-tb-sweep-${Date.now()}`;
  const input = trackedInput(`${sweepId}-seed7`, 2, join(blocker, 'tb')); // a folder inside a file: every write fails
  // The run is a sweep's child as far as the store says (sweeps/<id>/sweep.json lists it).
  const sweep: SweepSpec = {
    sweepId,
    configName: input.configName,
    overrides: [],
    grid: [],
    points: [{}],
    seeds: [7],
    parallel: 1,
    children: [{ run: input, point: 0, seed: 7 }],
  };
  await stack.store.putJson(sweepKey(sweepId), sweep);
  await start(input);
  const handle = stack.client.workflow.getHandle(input.runId);
  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, 2, 'the run completed');
  const history = (await handle.fetchHistory()).events ?? [];
  const failures = history.filter(
    (e) => e.activityTaskFailedEventAttributes && /ENOTDIR/.test(e.activityTaskFailedEventAttributes.failure?.message ?? ''),
  );
  assert.ok(failures.length >= 1, 'the track activity failed');
  const started = history.find((e) => String(e.eventId) === String(failures[0]?.activityTaskFailedEventAttributes?.startedEventId));
  assert.equal(started?.activityTaskStartedEventAttributes?.attempt, 3, 'after its 3 tries');
  const progress = await handle.query(progressQuery);
  assert.match(progress.trackerNote ?? '', /^tracking failed \(.*ENOTDIR.*\); the run goes on/);

  const logDir = join(logRoot, 'backfill');
  const track = (...args: string[]) =>
    spawnSync(process.execPath, [STARPO_BIN, 'track', ...args], {
      encoding: 'utf8',
      env: { ...process.env, ...endpointsToEnv(stack.servers.endpoints) },
    });
  const first = track(sweepId, '--log-dir', logDir);
  assert.equal(first.status, 0, first.stderr);
  assert.match(
    first.stdout,
    new RegExp(`${input.runId}: tensorboard .*/${sweepId}/${input.runId}: wrote 3 steps \\(0\\.\\.2\\); holds steps up to 2`),
  );
  const again = track(input.runId, '--to', 'tensorboard', '--log-dir', logDir);
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stdout, /nothing missing; holds steps up to 2/);
  const runs = readLogDir(logDir);
  assert.deepEqual(Object.keys(runs), [`${sweepId}/${input.runId}`]);
  assert.equal(await assertSameAsStore(input.runId, runs[`${sweepId}/${input.runId}`]), 3);

  const none = track('no-such-run', '--log-dir', logDir);
  assert.equal(none.status, 2);
  assert.match(none.stderr, /run "no-such-run" not found/);
});
