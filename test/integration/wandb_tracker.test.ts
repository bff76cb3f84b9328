/**
 * `track_with: wandb` through W&B's own Python client (PyPI wandb, python/wandb_requirements.txt) in offline
 * mode, against real Temporal and S3 servers: the run files trackRun writes for a stored run, read back with
 * W&B's own reader (`python -m wandb leet inspect --json`), hold every metric of every metrics/step-N.json at
 * its step, once, with the run id, project, group, tracker_kwargs and config; a second call writes nothing; a
 * run tracked in two parts, a writer SIGKILLed mid-way or orphaned by its parent's SIGKILL (it exits at once) and
 * a file cut mid-record each end with every step once.
 * A training run writes through the control worker beside TensorBoard; `starpo track --to wandb` backfills a
 * run that ran without track_with.
 */

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { endpointsToEnv } from '../../infra/env';
import { BRIDGE_PYTHON_DIR, ensureVenv, WANDB_VENV } from '../../infra/env_venv';
import { STARPO_BIN } from '../../src/cli/spawn_workers';
import type { RunSpec, StarpoRunResult, StepMetrics, SweepSpec } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { metricsKey, runKey, sweepKey } from '../../src/storage/keys';
import { listMetricSteps } from '../../src/storage/run_metrics';
import { trackRun } from '../../src/trackers/track_run';
import { shortRunInput } from '../helpers/faults';
import { useTrainingStack } from '../helpers/stack';
import { readLogDir } from '../helpers/tensorboard_reader';

const stack = useTrainingStack();
let python: string;
before(
  async () => {
    python = await ensureVenv(WANDB_VENV, { log: (line) => console.log(line) });
  },
  { timeout: 1_800_000 },
);
const logRoot = mkdtempSync(join(tmpdir(), 'starpo-wandb-it-'));
after(() => rmSync(logRoot, { recursive: true, force: true }));

const KEY = 'local-0123456789abcdef0123456789abcdef01234567';

/** ROLL-named metrics whose values differ per step; the last step is the final validation's (val/ only). */
function metricsOf(step: number, last: number): Record<string, number> {
  const val = { 'val/env/FrozenLake/success': step / 7, 'val/env/FrozenLake/num_actions': 3 + step };
  if (step === last) return val;
  return { ...val, 'env/FrozenLake/success': step / 10, 'actor/pg_loss': -0.125 * step + 1e-7, 'time/step': 1.5 + step * 1e-9 };
}

/** Stores a run of steps 0..`last` (wandb into `logDir`) and the given steps' metrics. */
async function storeRun(
  runId: string,
  logDir: string,
  last: number,
  steps: number[],
  trackWith: RunSpec['config']['track_with'] = 'wandb',
) {
  const spec = shortRunInput(runId, last);
  spec.config.track_with = trackWith;
  spec.config.tracker_kwargs = { log_dir: logDir, project: 'starpo-test', notes: 'a note', tags: ['a', 'b'], api_key: KEY };
  await stack.store.putJson(runKey(runId), spec);
  for (const step of steps) await stack.store.putJson(metricsKey(runId, step), { step, metrics: metricsOf(step, last) });
  return spec;
}

interface WandbRecord {
  type: string;
  run?: {
    run_id: string;
    project: string;
    run_group?: string;
    display_name: string;
    notes: string;
    tags: string[];
    config: { update: Record<string, unknown> };
  };
  history?: { item: Record<string, number> };
}

/** Every .wandb file of `runId` under `dir`, oldest first, read by W&B's own reader. */
function readRunFiles(dir: string, runId: string): { file: string; records: WandbRecord[] }[] {
  const wandbDir = join(dir, 'wandb');
  return readdirSync(wandbDir)
    .filter((name) => name.startsWith('offline-run-') && name.endsWith(`-${runId}`))
    .sort()
    .map((name) => {
      const file = join(wandbDir, name, `run-${runId}.wandb`);
      const out = spawnSync(python, ['-m', 'wandb', 'leet', 'inspect', '--json', file], { encoding: 'utf8', maxBuffer: 1 << 30 });
      assert.equal(out.status, 0, out.stderr);
      return {
        file,
        records: out.stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as WandbRecord),
      };
    });
}

/** The history rows of all of a run's files, in file order. */
function historyOf(dir: string, runId: string): Record<string, number>[] {
  return readRunFiles(dir, runId).flatMap((f) => f.records.flatMap((r) => (r.history ? [r.history.item] : [])));
}

/** Asserts that the run's files hold exactly the stored steps, each once, every metric equal. @returns the number of steps */
async function assertSameAsStore(dir: string, runId: string): Promise<number> {
  const rows = historyOf(dir, runId);
  const stored = await listMetricSteps(stack.store, runId);
  assert.deepEqual(
    rows.map((r) => r._step),
    stored.map((s) => s.step),
    'one history row per stored step: no duplicates, no gaps',
  );
  for (const [i, row] of rows.entries()) {
    const { metrics } = await stack.store.getJson<StepMetrics>(metricsKey(runId, row._step as number));
    const logged = Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('_')));
    assert.deepEqual(logged, metrics, `step ${row._step}`);
    assert.equal(row._timestamp, (stored[i]?.lastModified?.getTime() ?? 0) / 1000, "the step's stored time");
  }
  return rows.length;
}

test('track_with wandb: W&B reads every metric of every metrics/step-N.json at its step, once, with the config; a second call writes nothing', async () => {
  const logDir = join(logRoot, 'plain');
  const spec = await storeRun('wb-plain', logDir, 3, [0, 1, 2, 3]);
  const [report] = await trackRun(stack.store, spec.runId);
  assert.deepEqual(report, { tracker: 'wandb', where: join(logDir, spec.runId), written: [0, 1, 2, 3], lastStep: 3, repairedBytes: 0 });
  const dir = join(logDir, spec.runId);
  assert.equal(await assertSameAsStore(dir, spec.runId), 4);
  const [file] = readRunFiles(dir, spec.runId);
  const run = file?.records.find((r) => r.type === 'run')?.run;
  assert.equal(run?.run_id, spec.runId);
  assert.equal(run?.project, 'starpo-test');
  assert.equal(run?.display_name, spec.runId);
  assert.equal(run?.notes, 'a note');
  assert.deepEqual(run?.tags, ['a', 'b']);
  assert.equal(run?.run_group, undefined);
  const config = run?.config.update ?? {};
  assert.equal(config.max_steps, 3);
  assert.deepEqual(config.actor_train, JSON.parse(JSON.stringify(spec.config.actor_train)), 'the resolved config');
  assert.deepEqual(config.tracker_kwargs, { log_dir: logDir, project: 'starpo-test', notes: 'a note', tags: ['a', 'b'] });
  assert.ok(!readFileSync(file?.file ?? '').includes(KEY), 'the API key is not in the run file');

  const [again] = await trackRun(stack.store, spec.runId);
  assert.deepEqual([again?.written, again?.lastStep], [[], 3]);
  assert.equal(readRunFiles(dir, spec.runId).length, 1, 'nothing to log: no new run folder');
});

test("a sweep's run tracked in two parts (steps 0-1, then 0-3) holds 4 steps once, in the sweep's project and group", async () => {
  const logDir = join(logRoot, 'parts');
  const sweepId = 'wb-sweep';
  const spec = await storeRun(`${sweepId}-seed3`, logDir, 3, [0, 1]);
  spec.config.tracker_kwargs = { log_dir: logDir };
  await stack.store.putJson(runKey(spec.runId), spec);
  const sweep: SweepSpec = {
    sweepId,
    configName: spec.configName,
    overrides: [],
    grid: [],
    points: [{}],
    seeds: [3],
    parallel: 1,
    children: [{ run: spec, point: 0, seed: 3 }],
  };
  await stack.store.putJson(sweepKey(sweepId), sweep);
  const dir = join(logDir, sweepId, spec.runId);
  assert.deepEqual((await trackRun(stack.store, spec.runId))[0]?.written, [0, 1]);
  for (const step of [2, 3]) await stack.store.putJson(metricsKey(spec.runId, step), { step, metrics: metricsOf(step, 3) });
  assert.deepEqual((await trackRun(stack.store, spec.runId))[0]?.written, [2, 3]);
  assert.equal(await assertSameAsStore(dir, spec.runId), 4);
  const files = readRunFiles(dir, spec.runId);
  assert.equal(files.length, 2, 'one run folder per call that logs');
  for (const { records } of files) {
    const run = records.find((r) => r.type === 'run')?.run;
    assert.deepEqual([run?.run_id, run?.project, run?.run_group], [spec.runId, sweepId, sweepId]);
  }
});

const SCRIPT = join(BRIDGE_PYTHON_DIR, 'starpo_wandb.py');

/** The W&B script's `log` input: steps first..last of `runId` into `dir`. */
function logInput(dir: string, runId: string, first: number, last: number): string {
  const steps = [];
  for (let step = first; step <= last; step++) steps.push({ step, wallTime: 1.7e9 + step, metrics: metricsOf(step, last + 1) });
  return JSON.stringify({ dir, run_id: runId, init: { project: 'starpo-test' }, steps });
}

/** Resolves once a run file of `runId` under `dir` passes 100 kB (a few hundred steps logged). */
async function someStepsLogged(dir: string, runId: string): Promise<void> {
  const wandbDir = join(dir, 'wandb');
  const size = (name: string) => statSync(join(wandbDir, name, `run-${runId}.wandb`), { throwIfNoEntry: false })?.size ?? 0;
  while (!existsSync(wandbDir) || !readdirSync(wandbDir).some((name) => name.startsWith('offline-run-') && size(name) > 100_000))
    await new Promise((r) => setTimeout(r, 20));
}

/** Runs the W&B script's `log` with steps first..last of `runId` into `dir`; `kill` SIGKILLs it once some steps are logged. */
async function logSteps(dir: string, runId: string, first: number, last: number, kill: boolean): Promise<number | null> {
  const child = spawn(python, [SCRIPT, 'log'], { stdio: ['pipe', 'ignore', 'inherit'] });
  child.stdin.end(logInput(dir, runId, first, last));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  if (kill) {
    await someStepsLogged(dir, runId);
    child.kill('SIGKILL');
  }
  return exited;
}

test('a writer SIGKILLed mid-way, or its file cut mid-record: the next writer logs every step once, none missing', async (t) => {
  const dir = join(logRoot, 'killed', 'r');
  assert.equal(await logSteps(dir, 'wb-killed', 0, 9999, true), null, 'killed');
  const kept = historyOf(dir, 'wb-killed').map((r) => r._step);
  assert.ok(kept.length > 0 && kept.length < 10000, `the killed writer left ${kept.length} steps`);
  assert.deepEqual(kept, [...kept.keys()], 'a prefix of its steps');
  assert.equal(await logSteps(dir, 'wb-killed', 0, 9999, false), 0);
  assert.deepEqual(
    historyOf(dir, 'wb-killed').map((r) => r._step),
    [...Array(10000).keys()],
  );

  // The newest file cut in the middle of a record: the reader stops before it, the next writer goes on from there.
  const newest = readRunFiles(dir, 'wb-killed').at(-1)?.file ?? '';
  truncateSync(newest, statSync(newest).size - 300);
  const left = historyOf(dir, 'wb-killed').map((r) => r._step);
  assert.ok(left.length < 10000);
  t.diagnostic(`the killed writer left steps 0..${kept.length - 1}; the cut file left ${left.length} steps`);
  assert.equal(await logSteps(dir, 'wb-killed', 0, 10009, false), 0);
  const rows = historyOf(dir, 'wb-killed');
  assert.deepEqual(
    rows.map((r) => r._step),
    [...Array(10010).keys()],
  );
  for (const r of rows) assert.equal(r['val/env/FrozenLake/num_actions'], 3 + (r._step as number));
});

test('a training run with track_with [tensorboard, wandb]: the control worker writes every stored step once to both', async () => {
  const logDir = join(logRoot, 'run');
  const input = shortRunInput(`wb-run-${Date.now()}`, 2);
  input.config.eval_steps = 1;
  input.config.track_with = ['tensorboard', 'wandb'];
  input.config.tracker_kwargs = { log_dir: logDir };
  await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: input.runId, args: [input] });
  const result: StarpoRunResult = await stack.client.workflow.getHandle(input.runId).result();
  assert.equal(result.steps, 2);
  // steps 0 and 1, and step 2: the final validation's val/ metrics
  assert.equal(await assertSameAsStore(join(logDir, input.runId), input.runId), 3);
  const events = readLogDir(logDir)[input.runId]?.events ?? [];
  assert.deepEqual(
    events.filter((e) => e.what === 'summary' && !e.texts?.config).map((e) => e.step),
    [0, 1, 2],
    'TensorBoard beside it',
  );
});

test('a writer whose parent is SIGKILLed mid-way exits at once; the next writer logs every step once', async (t) => {
  const dir = join(logRoot, 'orphan', 'r');
  const input = join(logRoot, 'orphan-input.json');
  writeFileSync(input, logInput(dir, 'wb-orphan', 0, 9999));
  // A parent (as the control worker is) that runs the writer and is then SIGKILLed, leaving it an orphan.
  const parentCode = `const c = require('node:child_process').spawn(process.argv[1], [process.argv[2], 'log'], {
    stdio: [require('node:fs').openSync(process.argv[3], 'r'), 'ignore', 'inherit'] });
  console.log(c.pid); setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ['-e', parentCode, python, SCRIPT, input], { stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (b: Buffer) => resolve(b.toString()))));
  await someStepsLogged(dir, 'wb-orphan');
  parent.kill('SIGKILL');
  const killedAt = Date.now();
  // gone: no such process, or a zombie not yet reaped
  const alive = () => existsSync(`/proc/${pid}`) && !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  while (alive() && Date.now() - killedAt < 5000) await new Promise((r) => setTimeout(r, 20));
  assert.ok(!alive(), 'the writer outlived its parent');
  t.diagnostic(`the writer exited ${Date.now() - killedAt} ms after its parent was killed`);
  const kept = historyOf(dir, 'wb-orphan').map((r) => r._step);
  assert.ok(kept.length > 0 && kept.length < 10000, `the writer left ${kept.length} steps`);
  assert.equal(await logSteps(dir, 'wb-orphan', 0, 9999, false), 0);
  assert.deepEqual(
    historyOf(dir, 'wb-orphan').map((r) => r._step),
    [...Array(10000).keys()],
  );
});

test('starpo track --to wandb backfills a run that ran without track_with; again: nothing missing', async () => {
  const logDir = join(logRoot, 'backfill');
  const spec = await storeRun('wb-backfill', logDir, 2, [0, 1, 2], null);
  const track = (...args: string[]) =>
    spawnSync(process.execPath, [STARPO_BIN, 'track', ...args], {
      encoding: 'utf8',
      env: { ...process.env, ...endpointsToEnv(stack.servers.endpoints) },
    });
  const first = track(spec.runId, '--to', 'wandb', '--log-dir', logDir);
  assert.equal(first.status, 0, first.stderr);
  assert.match(
    first.stdout,
    new RegExp(`^${spec.runId}: wandb ${join(logDir, spec.runId)}: wrote 3 steps \\(0\\.\\.2\\); holds steps up to 2$`, 'm'),
  );
  const again = track(spec.runId, '--to', 'wandb', '--log-dir', logDir);
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stdout, /nothing missing; holds steps up to 2/);
  assert.equal(await assertSameAsStore(join(logDir, spec.runId), spec.runId), 3);
});
