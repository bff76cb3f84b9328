/**
 * The local servers of `env_config.command`: a process that plays an openenv tag with a command makes sure the
 * tag's server answers, starting it itself (a shell command, e.g. one that serves a Python env) unless its /health
 * answers already (another worker on this host started it, or a person did). It keeps its own server for its own
 * lifetime, starts it again when it has exited (a crash, a SIGKILL: the next episode's reset does), and stops it
 * when it exits, however it exits (spawnTied: even a SIGKILLed worker leaves no server behind). The server's
 * output goes to this process's own output (a worker's log).
 */
import type { ChildProcess } from 'node:child_process';
import { spawnTied } from '../../../infra/tied_process';
import { show } from '../../config/show';

interface LocalServer {
  /** The server this process started, or null when another process's answered. */
  child: ChildProcess | null;
  ready: Promise<void>;
  settled: boolean;
}

/** By command: one server per distinct command in this process. */
const servers = new Map<string, LocalServer>();

/**
 * How long a command that exited may still be followed by a /health answer: two workers that start the same
 * command at once race for its port, and the loser's exit says nothing while the winner comes up.
 */
const EXITED_GRACE_MS = 5000;

const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

async function answers(health: string): Promise<boolean> {
  try {
    const res = await fetch(health, { signal: AbortSignal.timeout(1000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/** Polls `health` until it answers 2xx; rejects when the child has exited (and nothing answers) or `seconds` pass. */
async function waitHealthy(child: ChildProcess, command: string, health: string, seconds: number): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  let exitedAt: number | null = null;
  while (Date.now() < deadline) {
    if (await answers(health)) return;
    if (!alive(child)) {
      exitedAt ??= Date.now();
      if (Date.now() - exitedAt > EXITED_GRACE_MS) {
        throw new Error(
          `env_config.command ${show(command)} exited (${child.signalCode ?? `code ${child.exitCode}`}) before ${health} answered`,
        );
      }
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`env_config.command ${show(command)}: ${health} did not answer within ${seconds} s of its start`);
}

/** Starts `command` (tied to this process) unless `health` answers already, and waits until it does. */
async function start(entry: LocalServer, command: string, health: string, startupSeconds: number): Promise<void> {
  if (await answers(health)) return;
  const child = spawnTied('/bin/sh', ['-c', command], { output: 'inherit' });
  child.on('error', () => {}); // a watchdog that cannot start shows as an exit in waitHealthy
  entry.child = child;
  try {
    await waitHealthy(child, command, health, startupSeconds);
  } catch (err) {
    child.kill('SIGTERM'); // one that never answered is not kept: the next caller starts a new one
    throw err;
  }
}

/**
 * Makes sure the server of `command` answers at `health`: reuses this process's own while it runs, else starts
 * one unless another process's answers. Concurrent callers share one start.
 * @throws Error (rejects) naming the command when it exits first or does not answer within `startupSeconds`
 */
export function ensureLocalServer(command: string, health: string, startupSeconds: number): Promise<void> {
  const running = servers.get(command);
  if (running !== undefined && (!running.settled || (running.child !== null && alive(running.child)))) return running.ready;
  const entry: LocalServer = { child: null, ready: Promise.resolve(), settled: false };
  entry.ready = start(entry, command, health, startupSeconds).finally(() => {
    entry.settled = true;
  });
  entry.ready.catch(() => {}); // each caller awaits it; a failed start is tried again by the next caller
  servers.set(command, entry);
  return entry.ready;
}
