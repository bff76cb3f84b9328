/**
 * One writer per tracker folder: a lock file created exclusively (`.starpo-lock`, holding the writer's host,
 * pid and time). The workflow never runs two track calls of a run at once, but `starpo track` may meet a
 * control worker, or a retried attempt the one it replaced; two writers would both append the steps past
 * the same last step. A lock left by a killed writer is taken over: at once when its process is gone from
 * this host, after STALE_SECONDS when it was another host's.
 */
import * as fs from 'node:fs';
import { hostname } from 'node:os';
import * as path from 'node:path';

/** A lock this old is a killed writer's whatever its host (a write holds it for seconds). */
export const STALE_SECONDS = 300;

const LOCK_NAME = '.starpo-lock';

/** Folders this process holds (a restarted container's worker may get its killed predecessor's pid). */
const heldHere = new Set<string>();

/** Another writer holds the folder. */
export class FolderBusyError extends Error {
  constructor(dir: string, holder: string) {
    super(`${dir} is being written by ${holder}; try again when it is done`);
    this.name = 'FolderBusyError';
  }
}

interface Holder {
  host: string;
  pid: number;
  at: number;
}

/** Whether the lock's writer is gone: its process is not alive on this host, or the lock is stale. */
function gone(file: string, holder: Holder | null, now: number): boolean {
  if (!holder) return true; // unreadable: a writer killed while writing the lock itself
  if (now - holder.at > STALE_SECONDS * 1000) return true;
  if (holder.host !== hostname()) return false;
  if (holder.pid === process.pid) return !heldHere.has(file);
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

function readHolder(file: string): Holder | null {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Holder;
  } catch {
    return null;
  }
}

/**
 * Runs `fn` holding the lock of `dir` (created if missing).
 * @throws FolderBusyError when a live writer holds it
 */
export async function withFolderLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, LOCK_NAME);
  const me: Holder = { host: hostname(), pid: process.pid, at: Date.now() };
  for (let attempt = 0; ; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify(me), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = readHolder(file);
      if (attempt > 0 || !gone(file, holder, Date.now()))
        throw new FolderBusyError(dir, holder ? `process ${holder.pid} on ${holder.host}` : 'another writer');
      fs.rmSync(file, { force: true });
    }
  }
  heldHere.add(file);
  try {
    return await fn();
  } finally {
    heldHere.delete(file);
    fs.rmSync(file, { force: true });
  }
}
