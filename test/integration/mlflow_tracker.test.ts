/**
 * `track_with: mlflow` through the real Temporal and S3 servers, the worker processes and a real `mlflow
 * server` (test/helpers/mlflow_server.ts), read back over MLflow's REST API: one MLflow run per starpo run,
 * found by its tag, params = the config, every metric of every stored metrics/step-N.json at its step once
 * (the stored object's time as timestamp), the report and config.yaml as artifacts, the run FINISHED; beside
 * TensorBoard in a list. A server stopped for part of a run: the run finishes, its status shows the warning,
 * the next call fills the gap. A server down for whole runs of a sweep: `starpo track <sweepId>` fills both
 * into the sweep's experiment. A writer killed between a batch and its cursor: the batch again adds nothing. A
 * stored run of more values than one request takes, tracked by trackRun directly.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { endpointsToEnv } from '../../infra/env';
import { STARPO_BIN } from '../../src/cli/spawn_workers';
import type { RunSpec, StarpoRunResult, StepMetrics, SweepSpec } from '../../src/contract';
import { type Progress, pauseSignal, progressQuery, TASK_QUEUES, unpauseSignal, WORKFLOW_TYPE } from '../../src/contract';
import { metricsKey, runKey, sweepKey } from '../../src/storage/keys';
import { listMetricSteps } from '../../src/storage/run_metrics';
import { configParams, MLFLOW_TAGS, REPORT_ARTIFACT } from '../../src/trackers/mlflow';
import { MLFLOW_LIMITS, MlflowClient, mlflowServer, tagOf } from '../../src/trackers/mlflow_client';
import { trackRun } from '../../src/trackers/track_run';
import { shortRunInput } from '../helpers/faults';
import { artifactText, type MlflowTestServer, metricHistory, metricKeys, startMlflowServer } from '../helpers/mlflow_server';
import { useTrainingStack } from '../helpers/stack';
import { readLogDir } from '../helpers/tensorboard_reader';

const stack = useTrainingStack();
let server: MlflowTestServer;
let client: MlflowClient;
before(async () => {
  server = await startMlflowServer();
  client = new MlflowClient(mlflowServer(server.uri, {}));
});
after(() => server?.close());
const logRoot = mkdtempSync(join(tmpdir(), 'starpo-mlflow-it-'));
after(() => rmSync(logRoot, { recursive: true, force: true }));

/** A short run (validation every step) tracked to the test's server. */
function trackedInput(runId: string, steps: number, kwargs: RunSpec['config']['tracker_kwargs'] = {}): RunSpec {
  const input = shortRunInput(runId, steps);
  input.config.eval_steps = 1;
  input.config.track_with = 'mlflow';
  input.config.tracker_kwargs = { tracking_uri: server.uri, ...kwargs };
  return input;
}

async function start(input: RunSpec): Promise<void> {
  await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: input.runId, args: [input] });
}

/** `starpo track ...` as a child process against the test's servers. */
function starpoTrack(...args: string[]) {
  return spawnSync(process.execPath, [STARPO_BIN, 'track', ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...endpointsToEnv(stack.servers.endpoints) },
  });
}

/** The one MLflow run of `runId` in `experiment`. */
async function mlflowRun(experiment: string, runId: string) {
  const found = await client.runsTagged(await client.experimentId(experiment), MLFLOW_TAGS.runId, runId);
  assert.equal(found.length, 1, `one MLflow run tagged ${runId} in ${experiment}`);
  return client.getRun((found[0] as (typeof found)[number]).info.run_id);
}

/**
 * Asserts that MLflow holds exactly the stored steps of `runId`: every metric's history is the stored values
 * at their steps, once each, timestamped with the stored object's time; the params are the config; the
 * cursor is the last step; the report and config.yaml are artifacts; the run is FINISHED. @returns the steps
 */
async function assertSameAsStore(input: RunSpec, experiment: string): Promise<number> {
  const run = await mlflowRun(experiment, input.runId);
  const stored = await listMetricSteps(stack.store, input.runId);
  const expected = new Map<string, Array<[number, number, number]>>();
  for (const s of stored) {
    const { metrics } = await stack.store.getJson<StepMetrics>(metricsKey(input.runId, s.step));
    for (const [key, value] of Object.entries(metrics))
      expected.set(key, [...(expected.get(key) ?? []), [s.step, value, s.lastModified?.getTime() ?? -1]]);
  }
  assert.deepEqual(metricKeys(run), [...expected.keys()].sort());
  for (const [key, values] of expected) {
    const history = (await metricHistory(client, run.info.run_id, key)).map((m) => [m.step, m.value, m.timestamp]);
    assert.deepEqual(
      history.sort((a, b) => (a[0] as number) - (b[0] as number)),
      values,
      `${key}: every stored step once`,
    );
  }
  const params = new Map((run.data.params ?? []).map((p) => [p.key, p.value]));
  assert.deepEqual(params, new Map(configParams(input.config).map((p) => [p.key, p.value])));
  assert.equal(tagOf(run, MLFLOW_TAGS.lastStep), String(stored.at(-1)?.step));
  assert.match(await artifactText(client, run, REPORT_ARTIFACT), new RegExp(`<title>[^<]*${input.runId}`));
  assert.match(await artifactText(client, run, 'config.yaml'), new RegExp(`runId: ${input.runId}`));
  assert.equal(run.info.status, 'FINISHED');
  return stored.length;
}

test('track_with [tensorboard, mlflow]: the MLflow run has the params, every metric of every step once, the report; TensorBoard too', async () => {
  const input = trackedInput(`it-mlflow-${Date.now()}`, 2, { project: 'it-project', log_dir: join(logRoot, 'tb') });
  input.config.track_with = ['tensorboard', 'mlflow'];
  await start(input);
  const result: StarpoRunResult = await stack.client.workflow.getHandle(input.runId).result();
  assert.equal(result.steps, 2);
  // steps 0 and 1, and step 2: the final validation's val/ metrics
  assert.equal(await assertSameAsStore(input, 'it-project'), 3);
  assert.equal(
    readLogDir(join(logRoot, 'tb'))[input.runId]?.events.filter((e) => e.what === 'summary').length,
    4,
    '3 steps and the config',
  );

  // A writer killed after logging steps 1 and 2 but before their cursor: the next call sends them again, and MLflow keeps one of each.
  const run = await mlflowRun('it-project', input.runId);
  await client.setTag(run.info.run_id, MLFLOW_TAGS.lastStep, '0');
  const again = starpoTrack(input.runId, '--to', 'mlflow');
  assert.equal(again.status, 0, again.stderr);
  assert.match(
    again.stdout,
    new RegExp(
      `${input.runId}: mlflow ${server.uri} experiment "it-project" run ${run.info.run_id}: wrote 2 steps \\(1\\.\\.2\\); holds steps up to 2`,
    ),
  );
  assert.equal(await assertSameAsStore(input, 'it-project'), 3);
});

test('a server stopped during a run: the run finishes, its status shows the warning, and the gap is filled when the server is back', async () => {
  const input = trackedInput(`it-mlflow-down-${Date.now()}`, 4);
  const handle = stack.client.workflow.getHandle(input.runId);
  await server.stop();
  let restarted = false;
  try {
    await start(input);
    let p: Progress | null = null;
    while (!p?.trackerNote) {
      await new Promise((r) => setTimeout(r, 200));
      p = await handle.query(progressQuery).catch(() => null);
    }
    assert.match(p.trackerNote, /^tracking failed \(.*no answer \(.*ECONNREFUSED.*\); the run goes on/);
    // Paused while the server is down, so it comes back before the run ends.
    await handle.signal(pauseSignal);
    await server.start();
    restarted = true;
    await handle.signal(unpauseSignal);
  } finally {
    if (!restarted) await server.start();
  }
  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, 4);
  assert.equal(await assertSameAsStore(input, input.config.exp_name), 5);
  assert.equal((await handle.query(progressQuery)).trackerNote, null, 'the warning is cleared once a call succeeds');
});

test("a server down for a sweep's runs: they finish, and `starpo track <sweepId>` fills both into the sweep's experiment", async () => {
  const sweepId = `it-mlflow-sweep-${Date.now()}`;
  const inputs = [1, 2].map((seed) => {
    const input = trackedInput(`${sweepId}-seed${seed}`, 1);
    input.config.seed = seed;
    return input;
  });
  // The runs are a sweep's children as far as the store says (sweeps/<id>/sweep.json lists them).
  const sweep: SweepSpec = {
    sweepId,
    configName: inputs[0]?.configName ?? '',
    overrides: [],
    grid: [],
    points: [{}],
    seeds: [1, 2],
    parallel: 2,
    children: inputs.map((run, i) => ({ run, point: 0, seed: i + 1 })),
  };
  await stack.store.putJson(sweepKey(sweepId), sweep);
  await server.stop();
  try {
    for (const input of inputs) await start(input);
    for (const input of inputs) {
      const handle = stack.client.workflow.getHandle(input.runId);
      assert.equal(((await handle.result()) as StarpoRunResult).steps, 1);
      assert.match((await handle.query(progressQuery)).trackerNote ?? '', /^tracking failed/);
    }
  } finally {
    await server.start();
  }
  const filled = starpoTrack(sweepId);
  assert.equal(filled.status, 0, filled.stderr);
  for (const input of inputs) {
    assert.match(filled.stdout, new RegExp(`${input.runId}: mlflow .* experiment "${sweepId}" run \\w+: wrote 2 steps \\(0\\.\\.1\\)`));
    assert.equal(await assertSameAsStore(input, sweepId), 2);
  }
  const again = starpoTrack(sweepId);
  assert.equal(again.status, 0, again.stderr);
  assert.equal(again.stdout.match(/nothing missing; holds steps up to 1/g)?.length, 2);
});

test('a stored run with more values than one log-batch request takes (2,800): every value once at its step, the cursor at the last, then nothing more', async () => {
  const input = trackedInput(`it-mlflow-many-${Date.now()}`, 40);
  await stack.store.putJson(runKey(input.runId), input);
  for (let step = 0; step < 40; step++) {
    const metrics = Object.fromEntries(Array.from({ length: 70 }, (_, k) => [`env/m${k}`, step + k / 1000]));
    await stack.store.putJson(metricsKey(input.runId, step), { step, metrics });
  }
  assert.ok(40 * 70 > 2 * MLFLOW_LIMITS.metricsPerBatch);
  const [first] = await trackRun(stack.store, input.runId);
  assert.deepEqual(
    first?.written,
    Array.from({ length: 40 }, (_, s) => s),
  );
  const run = await mlflowRun(input.config.exp_name, input.runId);
  assert.equal(tagOf(run, MLFLOW_TAGS.lastStep), '39');
  for (const key of ['env/m0', 'env/m69']) {
    const history = (await metricHistory(client, run.info.run_id, key)).map((m) => [m.step, m.value]);
    const k = Number(key.slice(5));
    assert.deepEqual(
      history.sort((a, b) => (a[0] as number) - (b[0] as number)),
      Array.from({ length: 40 }, (_, step) => [step, step + k / 1000]),
    );
  }
  const [again] = await trackRun(stack.store, input.runId);
  assert.deepEqual(again?.written, []);
});
