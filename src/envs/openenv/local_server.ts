/**
 * The local servers of `env_config.command`: a process that plays an openenv tag with a command starts the
 * tag's server itself (a shell command, e.g. one that serves a Python env), waits until its /health answers,
 * keeps it for its own lifetime (starting it again when it has exited, e.g. after a crash) and stops it when it
 * exits, however it exits (spawnTied: even a SIGKILLed worker leaves no server behind). The server's output goes
 * to this process's own output (a worker's log).
 */
import type { ChildProcess } from 'node:child_process';
import { spawnTied } from '../../../infra/tied_process';
import { show } from '../../config/show';

interface LocalServer {
  child: ChildProcess;
  ready: Promise<void>;
}

/** By command: one server per distinct command in this process. */
const servers = new Map<string, LocalServer>();

const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/** Polls `health` until it answers 2xx; rejects when the child exits first or `seconds` pass. */
async function waitHealthy(child: ChildProcess, command: string, health: string, seconds: number): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (!alive(child)) {
      throw new Error(
        `env_config.command ${show(command)} exited (${child.signalCode ?? `code ${child.exitCode}`}) before ${health} answered`,
      );
    }
    try {
      const res = await fetch(health, { signal: AbortSignal.timeout(1000) });
      await res.body?.cancel();
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`env_config.command ${show(command)}: ${health} did not answer within ${seconds} s of its start`);
}

/**
 * Starts the server of `command` unless it runs already, and waits until `health` answers.
 * @throws Error (rejects) naming the command when it exits first or does not answer within `startupSeconds`
 */
export function ensureLocalServer(command: string, health: string, startupSeconds: number): Promise<void> {
  const running = servers.get(command);
  if (running !== undefined && alive(running.child)) return running.ready;
  const child = spawnTied('/bin/sh', ['-c', command], { output: 'inherit' });
  child.on('error', () => {}); // a watchdog that cannot start shows as an exit in waitHealthy
  const ready = waitHealthy(child, command, health, startupSeconds);
  ready.catch(() => {}); // each caller awaits it; a failed start is retried by the next caller
  servers.set(command, { child, ready });
  return ready;
}
