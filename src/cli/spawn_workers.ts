/**
 * Starts worker processes (one per role) as children of the CLI, pointed at the given servers,
 * with their output in log files. Used by `starpo train` / `starpo resume` and by the tests.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { endpointsToEnv } from '../../infra/env';
import type { InfraEndpoints } from '../../infra/types';
import { BACKEND_LOST_EXIT_CODE } from '../activities/out_of_memory';
import { WATCHDOG_SIGNAL } from '../activities/watchdog';
import type { Role } from '../contract';
import type { BackendName } from '../model/backend_choice';

/** The path of the `starpo` bin script. */
export const STARPO_BIN = resolve(__dirname, '../../bin/starpo.js');

/** Running worker processes. */
export interface WorkerProcesses {
  /** One entry per process, in start order; a role may appear several times. */
  children: Array<{ role: Role; child: ChildProcess }>;
  /** Sends SIGTERM (graceful shutdown) and waits until every child has exited (SIGKILL after `graceSeconds`). */
  stop(graceSeconds?: number): Promise<void>;
  /**
   * Settles when a child exits by itself before `stop` (an error at start such as an unloadable backend, a
   * crash, a kill from outside); never for a child the watchdog ended or one whose backend ran out of memory
   * (exit code BACKEND_LOST_EXIT_CODE), which are started again.
   */
  died: Promise<WorkerExit>;
}

/** A worker process that exited by itself: its role, exit code or signal, and its log file. */
export interface WorkerExit {
  role: Role;
  code: number | null;
  signal: NodeJS.Signals | null;
  log: string;
}

/**
 * Starts one process for a role; stdout/stderr go to `<logDir>/<role><suffix>.log`.
 * @param backend its `--backend` (unset: the worker's own default, or the STARPO_BACKEND it inherits)
 */
export function spawnWorker(role: Role, endpoints: InfraEndpoints, logDir: string, suffix = '', backend?: BackendName): ChildProcess {
  mkdirSync(logDir, { recursive: true });
  const fd = openSync(join(logDir, `${role}${suffix}.log`), 'a');
  const child = spawn(process.execPath, [STARPO_BIN, 'worker', '--role', role, ...(backend ? ['--backend', backend] : [])], {
    env: { ...process.env, ...endpointsToEnv(endpoints) },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  return child;
}

/** Waits for a child to exit, killing it with SIGKILL after `seconds`. */
export function stopChild(child: ChildProcess, seconds = 40): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), seconds * 1000);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
    child.kill('SIGTERM');
  });
}

/**
 * Starts the given roles, each in its own process (a role listed twice gets two processes). A process that
 * the activity watchdog ended (signal WATCHDOG_SIGNAL, activities/watchdog.ts) or that exited because its
 * backend ran out of memory (BACKEND_LOST_EXIT_CODE, activities/out_of_memory.ts) is started again in its
 * place, logging to the same file, until `stop`.
 * @param backends the `--backend` of each role's processes (a role left out uses the worker's default)
 */
export function spawnWorkers(
  roles: Role[],
  endpoints: InfraEndpoints,
  logDir: string,
  backends: Partial<Record<Role, BackendName>> = {},
): WorkerProcesses {
  let stopping = false;
  let reportExit: (exit: WorkerExit) => void = () => undefined;
  const died = new Promise<WorkerExit>((resolve) => {
    reportExit = resolve;
  });
  const start = (entry: { role: Role; child: ChildProcess }, suffix: string): void => {
    entry.child = spawnWorker(entry.role, endpoints, logDir, suffix, backends[entry.role]);
    entry.child.once('exit', (code, signal) => {
      if (stopping) return;
      if (signal === WATCHDOG_SIGNAL || code === BACKEND_LOST_EXIT_CODE) start(entry, suffix);
      else reportExit({ role: entry.role, code, signal, log: join(logDir, `${entry.role}${suffix}.log`) });
    });
  };
  const children = roles.map((role, i) => {
    const entry = { role } as { role: Role; child: ChildProcess };
    start(entry, roles.indexOf(role) === i ? '' : `-${i}`);
    return entry;
  });
  return {
    children,
    died,
    stop: async (graceSeconds = 40) => {
      stopping = true;
      await Promise.all(children.map((c) => stopChild(c.child, graceSeconds)));
    },
  };
}
