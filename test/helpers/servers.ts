/**
 * Real servers for integration tests (docs/design.md, "Development").
 * Each call starts its own Temporal dev server and S3 server on free loopback ports with a fresh temp
 * state folder (binaries come from the shared cache), or uses TEMPORAL_ADDRESS/S3_ENDPOINT when set.
 *
 *   const servers = await startTestServers();
 *   after(() => servers.stop());
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { endpointsFromEnv } from '../../infra/env';
import { infraDown, infraUp } from '../../infra/lifecycle';
import { freePort } from '../../infra/ports';
import { killNow } from '../../infra/process';
import { removeWeedSockets } from '../../infra/s3';
import { readState } from '../../infra/state';
import type { InfraEndpoints } from '../../infra/types';

/** Running test servers. `stop` is idempotent and never throws. */
export interface TestServers {
  endpoints: InfraEndpoints;
  /** Temp state folder (undefined when the endpoints come from the environment). */
  stateDir?: string;
  /** Stops both servers (SIGTERM, then SIGKILL) and deletes the temp state folder. */
  stop(): Promise<void>;
}

/** State folders whose servers must die with this process, even if a test forgets `stop()` or crashes. */
const live = new Set<string>();

/** Synchronously SIGKILLs every server recorded in a live state folder (used at process exit). */
function killAll(): void {
  for (const dir of live) {
    try {
      const s = readState(dir);
      killNow([s.temporal?.process, s.s3?.process].filter((p): p is NonNullable<typeof p> => !!p));
      if (s.s3?.kind === 'seaweedfs') removeWeedSockets(s.s3.ports);
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      /* best effort at exit */
    }
  }
  live.clear();
}

let hooked = false;
/** Installs exit and signal hooks once. */
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      killAll();
      process.exit(sig === 'SIGINT' ? 130 : 143);
    });
  }
}

/**
 * Starts fresh servers (or returns env endpoints with a no-op stop).
 * @param opts.log progress lines (default: silent; set STARPO_TEST_LOG=1 to print them).
 * @throws whatever infraUp throws (InfraUnavailableError, InfraStartError); nothing is left running then.
 */
export async function startTestServers(opts: { log?: (line: string) => void } = {}): Promise<TestServers> {
  const fromEnv = endpointsFromEnv();
  if (fromEnv) return { endpoints: fromEnv, stop: async () => undefined };
  const log = opts.log ?? (process.env.STARPO_TEST_LOG ? (l: string) => process.stderr.write(`[test-infra] ${l}\n`) : undefined);
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'starpo-test-'));
  live.add(stateDir);
  hookExit();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      await infraDown({ stateDir, log });
    } catch {
      killAll();
    } finally {
      live.delete(stateDir);
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
  };
  try {
    const taken = new Set<number>();
    const endpoints = await infraUp({
      stateDir,
      log,
      temporalPort: await freePort(taken),
      uiPort: await freePort(taken),
      s3Port: await freePort(taken),
    });
    return { endpoints, stateDir, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
