/**
 * Sweeps through the real Temporal and S3 servers with worker processes: every child of a sweep ends with
 * the weights of the same run started alone (same config, grid point and seed), whether every worker
 * role and both servers are SIGKILLed during the sweep, or the sweep is paused, stopped and resumed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { endpointsToEnv } from '../../infra/env';
import { runInputFromFile } from '../../src/cli/run_input';
import { resumeSweep } from '../../src/cli/sweep';
import { gridArgument, sweepSpecFromFile } from '../../src/cli/sweep_spec';
import { sendSweepControl } from '../../src/cli/sweep_status';
import {
  type Progress,
  progressQuery,
  type StarpoRunResult,
  SWEEP_WORKFLOW_TYPE,
  type SweepProgress,
  type SweepResult,
  type SweepSpec,
  sweepProgressQuery,
  TASK_QUEUES,
  WORKFLOW_TYPE,
} from '../../src/contract';
import { sweepKey } from '../../src/storage/keys';
import { starpoCli } from '../helpers/cli';
import { CrashableStack, checkpointFingerprint, FAULT_TARGETS, faultPlan, runWithFaults } from '../helpers/faults';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();
const CONFIG = 'test/fixtures/tiny_frozen_lake.yaml';
/** Short runs whose weights move at every update (identity advantages; see faults.ts shortRunInput). */
const OVERRIDES = ['max_steps=3', 'eval_steps=0', 'reward_normalization.method=identity'];
const LR = 'actor_train.training_args.learning_rate';
const GRID = gridArgument(`${LR}=1.0e-4,3.0e-4`);
const SEEDS = 3;

type Fingerprint = Awaited<ReturnType<typeof checkpointFingerprint>>;
/** The final checkpoint of each run started alone, by `<lr>/<seed>`. */
const solo = new Map<string, Fingerprint>();
let soloSeconds = 0;

const fingerprint = (r: StarpoRunResult) => checkpointFingerprint(stack.store, r.finalCheckpoint);
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls a query every 100 ms until `done` holds (each answer checked, no time assumed). */
async function until<T>(ask: () => Promise<T>, done: (answer: T) => boolean): Promise<T> {
  for (;;) {
    const answer = await ask().catch(() => null);
    if (answer !== null && done(answer)) return answer;
    await wait(100);
  }
}
const sweepProgress = (id: string) => () => stack.client.workflow.getHandle(id).query(sweepProgressQuery);
const runProgress = (id: string) => () => stack.client.workflow.getHandle(id).query(progressQuery);

/** Runs `starpo <args>` against the test servers; never rejects. */
const starpo = (...args: string[]) => starpoCli(stack.servers.endpoints, ...args);

async function startSweep(spec: SweepSpec): Promise<void> {
  await stack.client.workflow.start(SWEEP_WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: spec.sweepId, args: [spec] });
}

/** Every child completed all its steps with the weights of its solo run. */
async function assertSoloWeights(spec: SweepSpec, result: SweepResult): Promise<void> {
  assert.deepEqual(
    result.children.map((c) => [c.runId, c.state]),
    spec.children.map((c) => [c.run.runId, 'completed']),
  );
  for (const [i, c] of result.children.entries()) {
    const child = spec.children[i];
    assert.equal(c.result?.steps, 3);
    assert.deepEqual(await fingerprint(c.result!), solo.get(`${spec.points[child.point][LR]}/${child.seed}`), `${c.runId} = its solo run`);
  }
}

test('the references: each (learning rate, seed) run alone', async () => {
  const started = Date.now();
  for (const lr of GRID[0].values) {
    for (let seed = 7; seed < 7 + SEEDS; seed++) {
      const { input } = runInputFromFile(CONFIG, `it-solo-${lr}-${seed}-${Date.now()}`, [...OVERRIDES, `${LR}=${lr}`, `seed=${seed}`]);
      const handle = await stack.client.workflow.start(WORKFLOW_TYPE, {
        taskQueue: TASK_QUEUES.control,
        workflowId: input.runId,
        args: [input],
      });
      solo.set(`${lr}/${seed}`, await fingerprint(await handle.result()));
    }
  }
  soloSeconds = (Date.now() - started) / 1000;
  assert.equal(
    new Set([...solo.values()].map((f) => f.model)).size,
    GRID[0].values.length * SEEDS,
    'seeds and learning rates change the weights',
  );
});

test('a sweep of 3 seeds x 2 learning rates, 2 at a time, survives a SIGKILL of every worker role and both servers: each run ends with its solo weights', async () => {
  const spec = sweepSpecFromFile(CONFIG, OVERRIDES, { seeds: SEEDS, grid: GRID, parallel: 2, sweepId: `it-sweep-faults-${Date.now()}` });
  await startSweep(spec);
  const crashable = new CrashableStack(stack.servers, stack.workers, stack.logDir);
  // Two runs at a time on one set of workers: about half the solo runs' time in all.
  const { result, kills } = await runWithFaults<SweepResult>(stack.client, spec.sweepId, crashable, faultPlan(2, 0, soloSeconds / 2));
  assert.deepEqual(kills.map((k) => k.target).sort(), [...FAULT_TARGETS].sort(), 'every target was killed while the sweep was open');
  await assertSoloWeights(spec, result);
  assert.equal(result.stoppedBy, null);
  assert.deepEqual(await stack.store.getJson(sweepKey(spec.sweepId)), spec, 'sweeps/<id>/sweep.json holds the spec');

  const status = await starpo('status', spec.sweepId);
  assert.equal(status.code, 0, status.stderr);
  assert.match(
    status.stdout,
    new RegExp(`sweep ${spec.sweepId} · COMPLETED · config tiny_frozen_lake · 6 runs, 2 grid points x 3 seeds, 2 at a time`),
  );
  for (const c of spec.children)
    assert.match(status.stdout, new RegExp(`${c.run.runId}\\s+learning_rate=\\S+\\s+${c.seed}\\s+COMPLETED\\s+3/3`));

  const out = join(mkdtempSync(join(tmpdir(), 'starpo-sweep-report-')), 'sweep.html');
  const report = await starpo('report', spec.sweepId, '-o', out);
  assert.equal(report.code, 0, report.stderr);
  const html = readFileSync(out, 'utf8');
  for (const section of ['summary', 'charts', 'final', 'seeds', 'configs']) assert.match(html, new RegExp(`data-section="${section}"`));
  assert.match(html, /<th>state<\/th><td>COMPLETED<\/td>/);
  for (const id of ['env/success@step', 'env/success@minutes', 'actor/entropy@step'])
    assert.match(html, new RegExp(`data-chart="${id}"><figcaption>[^<]+</figcaption><svg`));
  assert.equal((html.match(/<tr data-run="/g) ?? []).length, 6, 'a row per run');
  for (const p of [0, 1]) assert.match(html, new RegExp(`<tr data-point="${p}"><td>g${p} learning_rate=`));
  assert.match(html, /<tr><td>actor_train\.training_args\.learning_rate<\/td><td>0\.0001<\/td><td>0\.0003<\/td>/, 'a column per run');
  assert.match(html, /<tr><td>seed<\/td><td>7<\/td><td>7<\/td><td>8<\/td>/);
  assert.doesNotMatch(html, /<tr><td>max_steps</, 'keys every run shares are left out');
});

test('pause and stop reach the running run and hold back the rest; `starpo resume` of the stopped sweep ends with the solo weights', async () => {
  const spec = sweepSpecFromFile(CONFIG, OVERRIDES, {
    seeds: 2,
    grid: gridArgument(`${LR}=${GRID[0].values[0]}`),
    parallel: 1,
    sweepId: `it-sweep-stop-${Date.now()}`,
  });
  const [first, second] = spec.children.map((c) => c.run.runId);
  await startSweep(spec);
  await until(runProgress(first), (p: Progress) => p.step >= 1);
  const paused = await sendSweepControl(stack.client, spec.sweepId, 'pause');
  assert.match(paused, new RegExp(`paused: no run starts; running runs pause after their step in flight \\(${first}\\); 1 waiting`));
  await until(runProgress(first), (p: Progress) => p.phase === 'paused');
  const held = await until(sweepProgress(spec.sweepId), (p: SweepProgress) => p.paused);
  assert.deepEqual(
    held.children.map((c) => c.state),
    ['running', 'waiting'],
  );

  const stopped = await sendSweepControl(stack.client, spec.sweepId, 'stop', 'test');
  assert.match(stopped, /stops: no run starts/);
  const result: SweepResult = await stack.client.workflow.getHandle(spec.sweepId).result();
  assert.equal(result.stoppedBy, 'stop: test');
  assert.deepEqual(
    result.children.map((c) => c.runId),
    [first],
    'the waiting run never started',
  );
  const early = result.children[0].result!;
  assert.equal(early.stoppedBy, 'stop: test');
  assert.ok(early.steps < 3, `stopped before its last step (after ${early.steps})`);

  const lines: string[] = [];
  const env = endpointsToEnv(stack.servers.endpoints); // resume finds the servers through the environment
  Object.assign(process.env, env);
  try {
    await assertSoloWeights(spec, await resumeSweep(spec.sweepId, { workers: false, rolloutWorkers: 1, log: (l) => lines.push(l) }));
  } finally {
    for (const name of Object.keys(env)) delete process.env[name];
  }
  assert.ok(
    lines.some((l) => l.includes(`sweep ${spec.sweepId} was completed; 0 runs completed, 2 to continue`)),
    lines.join('\n'),
  );
  assert.ok(
    lines.some((l) => l.startsWith(`${second} (learning_rate=`) && l.endsWith('completed')),
    lines.join('\n'),
  );
});
