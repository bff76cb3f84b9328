/**
 * The per-project state folder and its `infra.json`: ports, pids and keys of the servers infraUp started,
 * plus a lock so two `infra up` commands on one state folder do not race.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import type { InfraOptions } from './types';

/** The repository root (infra/ sits at the top level). */
export const REPO_ROOT = path.resolve(__dirname, '..');

/** State folder: opts.stateDir, else STARPO_STATE_DIR, else `<repo>/.starpo/infra` (gitignored). Absolute path. */
export function resolveStateDir(opts: InfraOptions = {}): string {
  return path.resolve(opts.stateDir ?? process.env.STARPO_STATE_DIR ?? path.join(REPO_ROOT, '.starpo', 'infra'));
}

const processSchema = z.object({
  pid: z.number().int(),
  binary: z.string(),
  port: z.number().int(),
  logFile: z.string(),
  startedAt: z.string(),
});

const stateSchema = z.object({
  version: z.literal(1),
  temporal: z
    .object({
      ports: z.object({ grpc: z.number().int(), ui: z.number().int(), http: z.number().int(), metrics: z.number().int() }),
      namespace: z.string(),
      process: processSchema.nullable(),
    })
    .optional(),
  s3: z
    .object({
      kind: z.enum(['seaweedfs', 'minio']),
      ports: z.record(z.string(), z.number().int()),
      accessKey: z.string(),
      secretKey: z.string(),
      bucket: z.string(),
      region: z.string(),
      process: processSchema.nullable(),
    })
    .optional(),
});

/** Contents of infra.json. `process` is null once stopped (ports and keys are kept so data stays usable). */
export type InfraState = z.infer<typeof stateSchema>;

/** What the server start functions (temporal.ts, s3.ts) share within one infraUp call. */
export interface StartContext {
  stateDir: string;
  cacheDir: string;
  opts: InfraOptions;
  log: (line: string) => void;
  /** Ports already handed out in this call. */
  taken: Set<number>;
  /** Persists the state after each change, so a crash still leaves the pids recorded. */
  save: () => void;
}

/** Path of infra.json in a state folder. */
export function statePath(stateDir: string): string {
  return path.join(stateDir, 'infra.json');
}

/**
 * Reads infra.json; an empty state when the file does not exist.
 * @throws Error naming the file when it exists but is not valid state (delete it, after stopping its pids, to reset).
 */
export function readState(stateDir: string): InfraState {
  const file = statePath(stateDir);
  if (!fs.existsSync(file)) return { version: 1 };
  const parsed = stateSchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
  if (!parsed.success) throw new Error(`${file} is not valid infra state (${parsed.error.message}); stop its processes and delete it`);
  return parsed.data;
}

/** Writes infra.json atomically (temp file + rename), mode 0600 because it holds S3 keys. */
export function writeState(stateDir: string, state: InfraState): void {
  fs.mkdirSync(stateDir, { recursive: true });
  const file = statePath(stateDir);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** true when `pid` exists. */
function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Runs `fn` holding `<state>/lock` (a file with the holder's pid; a lock whose holder is gone is taken over).
 * Waits up to `waitSeconds` seconds for another holder.
 * @throws Error naming the lock file and its holder pid on timeout.
 */
export async function withStateLock<T>(stateDir: string, fn: () => Promise<T>, waitSeconds = 180): Promise<T> {
  const prev = inProcess.get(stateDir) ?? Promise.resolve();
  const run = prev.catch(() => undefined).then(() => lockFile(stateDir, fn, waitSeconds));
  inProcess.set(
    stateDir,
    run.catch(() => undefined),
  );
  return run;
}

/** Serialises lock holders inside this Node process (the lock file holds our own pid). */
const inProcess = new Map<string, Promise<unknown>>();

async function lockFile<T>(stateDir: string, fn: () => Promise<T>, waitSeconds: number): Promise<T> {
  fs.mkdirSync(stateDir, { recursive: true });
  const lock = path.join(stateDir, 'lock');
  const deadline = Date.now() + waitSeconds * 1000;
  for (;;) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(fs.readFileSync(lock, 'utf8').trim());
      if (!Number.isInteger(holder) || holder <= 0 || !pidExists(holder)) {
        fs.rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline)
        throw new Error(`${lock} is held by pid ${holder} for more than ${waitSeconds} s; is another "starpo infra" running?`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}
