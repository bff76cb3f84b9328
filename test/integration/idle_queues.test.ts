/**
 * A run whose phase waits on a task queue no worker polls says so, through the real Temporal and S3
 * servers and real worker processes: `starpo status --json` and the workflow's current details (the
 * UI's) name the queue once its only rollout worker is killed, the note clears when a rollout worker
 * polls again, and with every worker gone `status` still answers (exit 0) from what the server holds.
 */

import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { runInputFromFile } from '../../src/cli/run_input';
import { spawnWorker, stopChild } from '../../src/cli/spawn_workers';
import type { Role, RunStatus } from '../../src/contract';
import { progressQuery, TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { starpoCli } from '../helpers/cli';
import { startTestServers, type TestServers } from '../helpers/servers';

let servers: TestServers;
let client: Client;
const logDir = mkdtempSync(join(tmpdir(), 'starpo-idle-'));
const workers = new Map<Role, ChildProcess>();
const start = (role: Role) => workers.set(role, spawnWorker(role, servers.endpoints, logDir));

before(async () => {
  servers = await startTestServers();
  client = new Client({ connection: await Connection.connect({ address: servers.endpoints.temporalAddress }) });
  for (const role of ['control', 'rollout', 'update'] as const) start(role);
});

after(async () => {
  await Promise.all([...workers.values()].map((w) => stopChild(w, 5)));
  await client.connection.close();
  await servers.stop();
  rmSync(logDir, { recursive: true, force: true });
});

/** Polls `read` every 2 s until `done` holds of its value; fails after `seconds`. */
async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, seconds = 240): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(v)} after ${seconds} s`);
    await new Promise((r) => setTimeout(r, 2000));
  }
}

async function status(runId: string): Promise<RunStatus> {
  const out = await starpoCli(servers.endpoints, 'status', runId, '--json');
  assert.equal(out.code, 0, out.stderr);
  return JSON.parse(out.stdout) as RunStatus;
}

const details = async (h: WorkflowHandle) =>
  (await h.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
const namesRollout = (notes: string[] | undefined) => (notes ?? []).some((n) => n.includes(`task queue ${TASK_QUEUES.rollout}`));

test('a queue without workers is named by status and the current details, and clears when a worker polls again', async () => {
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', `it-idle-${Date.now()}`);
  Object.assign(input.config, { max_steps: 500, eval_steps: 0, heartbeat_timeout_seconds: 5 });
  const handle = await client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: input.runId, args: [input] });
  await until(
    'steps done',
    () => handle.query(progressQuery),
    (p) => p.step >= 1,
  );

  // The only rollout worker crashes: its shard times out on heartbeats and waits for a worker no one runs.
  workers.get('rollout')?.kill('SIGKILL');
  const idle = await until(
    'status names the rollout queue',
    () => status(input.runId),
    (s) => namesRollout(s.idleQueues),
  );
  assert.equal(idle.progress?.phase, 'rollout');
  assert.match(idle.idleQueues?.join('\n') ?? '', /starpo worker --role rollout, or starpo resume it-idle-/);
  const stuckAt = idle.progress?.step;
  const shown = await until(
    'current details name the rollout queue',
    () => details(handle),
    (d) => d.includes(TASK_QUEUES.rollout),
  );
  assert.match(shown, /^step \d+\/500 · rollout · .*\n\n\*\*no worker polls task queue starpo-rollout \(none seen for 70 s\)/);
  const text = await starpoCli(servers.endpoints, 'status', input.runId);
  assert.match(text.stdout, /^no worker +no worker polls task queue starpo-rollout/m);

  start('rollout');
  await until(
    'status clears the note',
    () => status(input.runId),
    (s) => !s.idleQueues && (s.progress?.step ?? 0) > (stuckAt ?? 0),
  );
  await until(
    'current details clear the note',
    () => details(handle),
    (d) => !d.includes('no worker'),
  );

  // Every worker gone: status answers from describe, the search attributes and the memo.
  await Promise.all([...workers.values()].map((w) => stopChild(w, 5)));
  const gone = await until(
    'status without any worker',
    () => status(input.runId),
    (s) => (s.idleQueues ?? []).some((n) => n.includes(`task queue ${TASK_QUEUES.control} `)),
  );
  assert.equal(gone.status, 'RUNNING');
  assert.equal(gone.progress, undefined);
  assert.ok((gone.step ?? 0) >= 1 && gone.maxSteps === 500, JSON.stringify(gone));
  assert.match(gone.phase ?? '', /^(rollout or validation|update|waiting for a control worker)$/);
  assert.match(gone.note ?? '', /no control worker answered within 5 s/);
  assert.match(gone.idleQueues?.join('\n') ?? '', /starpo worker --role control/);
  const plain = await starpoCli(servers.endpoints, 'status', input.runId);
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(plain.stdout, /^step +\d+\/500 · val success -$/m);
  assert.match(plain.stdout, /^phase +.+ \(from the pending activities\)$/m);
  await handle.terminate('test over');

  // the workers' logs hold no expected-but-alarming SDK lines (a role not polling the other kind of task, webpack's report)
  for (const role of ['control', 'rollout', 'update']) {
    const text = readFileSync(join(logDir, `${role}.log`), 'utf8');
    assert.match(text, new RegExp(`starpo worker \\(${role}\\) polling`));
    assert.doesNotMatch(text, /No (workflows|activities) registered|webpack/);
  }
});
