/**
 * The whole training stack for an integration test file: real Temporal and S3 servers (servers.ts),
 * the control, rollout and update workers as separate processes, a Temporal client and the object
 * store. `useTrainingStack()` registers node:test before/after hooks; the returned object is filled
 * in by `before` and torn down (workers, client, servers, worker logs) by `after`. The workers preload
 * the test tools (worker_preload.js: the chaos env, the stall fault), and so does this process.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { spawnWorkers, type WorkerProcesses } from '../../src/cli/spawn_workers';
import { ObjectStore } from '../../src/storage/object_store';
import { startTestServers, type TestServers } from './servers';
import './test_tools';

/** Spawned workers (they inherit this process's environment) load the test tools first. */
const PRELOAD = `--require ${join(__dirname, 'worker_preload.js')}`;
if (!(process.env.NODE_OPTIONS ?? '').includes(PRELOAD)) process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} ${PRELOAD}`.trim();

/** What a test file gets; valid inside tests (after `before` ran). */
export interface TrainingStack {
  servers: TestServers;
  workers: WorkerProcesses;
  client: Client;
  store: ObjectStore;
  /** Folder of the workers' log files. */
  logDir: string;
}

/** Starts the stack before the file's tests and stops it after them. */
export function useTrainingStack(): TrainingStack {
  const stack = { logDir: mkdtempSync(join(tmpdir(), 'starpo-workers-')) } as TrainingStack;
  before(async () => {
    stack.servers = await startTestServers();
    stack.workers = spawnWorkers(['control', 'rollout', 'update'], stack.servers.endpoints, stack.logDir);
    stack.client = new Client({ connection: await Connection.connect({ address: stack.servers.endpoints.temporalAddress }) });
    stack.store = new ObjectStore(stack.servers.endpoints.s3);
  });
  after(async () => {
    await stack.workers?.stop(5);
    await stack.client?.connection.close();
    await stack.servers?.stop();
    rmSync(stack.logDir, { recursive: true, force: true });
  });
  return stack;
}
