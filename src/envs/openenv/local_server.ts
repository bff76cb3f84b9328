/**
 * The local servers of `env_config.command`: a process that plays an openenv tag with a command starts the
 * tag's server itself (a shell command, e.g. one that serves a Python env), waits until its /health answers,
 * keeps it for its own lifetime (starting it again when it has exited, e.g. after a crash) and stops it when it
 * exits. The server's output goes to this process's own output (a worker's log).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { show } from '../../config/show';

interface LocalServer {
  child: ChildProcess;
  ready: Promise<void>;
}

/** By command: one server per distinct command in this process. */
const servers = new Map<string, LocalServer>();

const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/** Stops every local server (its whole process group: the shell and what it started). */
function stopAll(): void {
  for (const { child } of servers.values()) {
    if (child.pid !== undefined && alive(child)) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
  }
}

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
  if (servers.size === 0) process.once('exit', stopAll);
  // Detached: its own process group, so stopping it stops what the shell started too.
  const child = spawn(command, { shell: true, detached: true, stdio: ['ignore', 'inherit', 'inherit'] });
  child.unref(); // the server lives as long as this process, never longer, and does not keep it alive
  child.on('error', () => {}); // a shell that cannot start shows as an exit in waitHealthy
  const ready = waitHealthy(child, command, health, startupSeconds);
  ready.catch(() => {}); // each caller awaits it; a failed start is retried by the next caller
  servers.set(command, { child, ready });
  return ready;
}
