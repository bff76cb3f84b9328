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
import type { Role } from '../../src/contract';
import { ObjectStore } from '../../src/storage/object_store';
import { startTestServers, type TestServers } from './servers';
import './test_tools';

/** Spawned workers (they inherit this process's environment) load the test tools first. */
const PRELOAD = `--require ${join(__dirname, 'worker_preload.js')}`;
if (!(process.env.NODE_OPTIONS ?? '').includes(PRELOAD)) process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} ${PRELOAD}`.trim();

/** What a test file or a bench gets; valid inside tests (after `before` ran). */
export interface TrainingStack {
  servers: TestServers;
  workers: WorkerProcesses;
  client: Client;
  store: ObjectStore;
  /** Folder of the workers' log files. */
  logDir: string;
}

/** A new folder for the workers' logs. */
const newLogDir = () => mkdtempSync(join(tmpdir(), 'starpo-workers-'));

/**
 * Starts the servers, one worker process per entry of `roles` (logging into `logDir`), a client and the store.
 * @returns the stack and `stop`, which ends all of it and removes the worker logs
 */
export async function startTrainingStack(
  roles: readonly Role[] = ['control', 'rollout', 'update'],
  logDir = newLogDir(),
): Promise<TrainingStack & { stop: () => Promise<void> }> {
  const servers = await startTestServers();
  const workers = spawnWorkers([...roles], servers.endpoints, logDir);
  const client = new Client({ connection: await Connection.connect({ address: servers.endpoints.temporalAddress }) });
  const store = new ObjectStore(servers.endpoints.s3);
  const stop = async () => {
    await workers.stop(5);
    await client.connection.close();
    await servers.stop();
    rmSync(logDir, { recursive: true, force: true });
  };
  return { servers, workers, client, store, logDir, stop };
}

/** Starts the stack before the file's tests and stops it after them. */
export function useTrainingStack(): TrainingStack {
  // The log folder exists at once: test files name files in it before their tests start.
  const stack = { logDir: newLogDir() } as TrainingStack & { stop?: () => Promise<void> };
  before(async () => {
    Object.assign(stack, await startTrainingStack(undefined, stack.logDir));
  });
  after(async () => {
    await stack.stop?.();
  });
  return stack;
}
