/**
 * Detached server processes: start them so they outlive the `starpo infra up` command, wait until they
 * are healthy, recognise them again by pid, and stop them by pid (SIGTERM, then SIGKILL).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { InfraStartError } from './errors';
import type { ProcessRecord } from './types';

/** A just-started server process. */
export interface Spawned {
  pid: number;
  /** Exit code/signal once the process has exited, else null (only known while this Node process runs). */
  exited(): { code: number | null; signal: NodeJS.Signals | null } | null;
}

/**
 * Starts `binary args` in its own process group with stdout and stderr appended to `logFile`,
 * and lets it outlive this Node process.
 * @throws Error when the process cannot be spawned (names the binary).
 */
export function spawnDetached(
  binary: string,
  args: string[],
  opts: { logFile: string; cwd: string; env?: Record<string, string> },
): Spawned {
  const fd = fs.openSync(opts.logFile, 'a');
  try {
    fs.writeSync(fd, `\n--- ${new Date().toISOString()} starting: ${binary} ${args.join(' ')}\n`);
    const child = spawn(binary, args, {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let spawnError: Error | null = null;
    child.once('error', (err) => {
      spawnError = err;
      exitInfo = { code: null, signal: null };
    });
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
    });
    child.unref();
    if (child.pid === undefined) throw new Error(`could not start ${binary}: ${spawnError ?? 'no pid'}`);
    return { pid: child.pid, exited: () => exitInfo };
  } finally {
    fs.closeSync(fd);
  }
}

/** The executable path of a live pid from /proc, '' when it is gone or a zombie, null when /proc is unavailable. */
function procBinary(pid: number): string | null {
  if (!fs.existsSync('/proc/self/cmdline')) return null;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (/\) Z /.test(stat)) return '';
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
  } catch {
    return '';
  }
}

/**
 * Polls `probe` (null = healthy, else a reason) every 300 ms until healthy.
 * @param deadlineSeconds seconds before giving up.
 * @throws InfraStartError when the process exits or the deadline passes; the message names the server,
 *   the last reason and the tail of its log file.
 */
export async function waitHealthy(
  what: string,
  rec: ProcessRecord,
  probe: () => Promise<string | null>,
  deadlineSeconds = 60,
): Promise<void> {
  const deadline = Date.now() + deadlineSeconds * 1000;
  let reason = 'not probed yet';
  for (;;) {
    reason = (await probe()) ?? '';
    if (reason === '') return;
    if (!isAlive(rec)) {
      throw new InfraStartError(
        `${what} (pid ${rec.pid}) exited before it became healthy (${reason}).\nLast lines of ${rec.logFile}:\n${logTail(rec.logFile)}`,
      );
    }
    if (Date.now() > deadline) {
      throw new InfraStartError(
        `${what} (pid ${rec.pid}) not healthy after ${deadlineSeconds} s: ${reason}\nLast lines of ${rec.logFile}:\n${logTail(rec.logFile)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** true when `rec.pid` runs and (where /proc exists) is still `rec.binary`, not a recycled pid. */
export function isAlive(rec: Pick<ProcessRecord, 'pid' | 'binary'>): boolean {
  if (!Number.isInteger(rec.pid) || rec.pid <= 1) return false;
  try {
    process.kill(rec.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const bin = procBinary(rec.pid);
  return bin === null || bin === rec.binary;
}

/** Sends `signal` to the process group of `pid` (falls back to the pid alone). Never throws. */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

/** Polls until `rec` is gone or `seconds` pass; true when gone. */
async function waitGone(rec: Pick<ProcessRecord, 'pid' | 'binary'>, seconds: number): Promise<boolean> {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (!isAlive(rec)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !isAlive(rec);
}

/**
 * Stops a recorded server: SIGTERM to its process group, then SIGKILL after `graceSeconds` (seconds).
 * Idempotent: a process already gone (or a recycled pid running something else) is left alone.
 * @returns 'not-running' | 'stopped' | 'killed'
 */
export async function stopProcess(
  rec: Pick<ProcessRecord, 'pid' | 'binary'>,
  graceSeconds = 15,
): Promise<'not-running' | 'stopped' | 'killed'> {
  if (!isAlive(rec)) return 'not-running';
  signalGroup(rec.pid, 'SIGTERM');
  if (await waitGone(rec, graceSeconds)) return 'stopped';
  signalGroup(rec.pid, 'SIGKILL');
  await waitGone(rec, 5);
  return 'killed';
}

/** Synchronous last resort for exit handlers: SIGKILL the process group of each live record. */
export function killNow(recs: Array<Pick<ProcessRecord, 'pid' | 'binary'>>): void {
  for (const rec of recs) if (isAlive(rec)) signalGroup(rec.pid, 'SIGKILL');
}

/** Last `n` lines of a log file ('' when missing), for error messages. */
export function logTail(file: string, n = 25): string {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const len = Math.min(size, 16384);
      const buf = Buffer.alloc(len);
      fs.readSync(fd, buf, 0, len, size - len);
      return buf.toString('utf8').split('\n').slice(-n).join('\n');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}
