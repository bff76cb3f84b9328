/**
 * Local infrastructure: the Temporal dev server and an S3 server on 127.0.0.1, installed into a cache
 * outside the repo and started with state under `<repo>/.starpo/infra`, or external servers from
 * environment variables (docs/operating.md, "The local servers (`starpo infra`)"). infraUp / infraDown /
 * infraStatus are the three verbs of `starpo infra`; resolveEndpoints is what the other commands use.
 */
import * as fs from 'node:fs';
import { resolveCacheDir } from './binaries';
import { endpointsFromEnv } from './env';
import { InfraUnavailableError } from './errors';
import { canConnect } from './ports';
import { isAlive, stopProcess } from './process';
import { ensureS3, removeWeedSockets, s3EndpointOf } from './s3';
import { type InfraState, readState, resolveStateDir, type StartContext, withStateLock, writeState } from './state';
import { ensureTemporal } from './temporal';
import { temporalTarget } from './temporal_profile';
import type { InfraEndpoints, InfraOptions, ProcessRecord } from './types';

/**
 * Endpoints of the servers recorded in `state`, or undefined when either was never started. The namespace
 * is TEMPORAL_NAMESPACE's (or `--namespace`, or the profile's) when set, so every command reaches runs of
 * another namespace of the local server.
 */
function endpointsOf(state: InfraState): InfraEndpoints | undefined {
  if (!state.temporal || !state.s3) return undefined;
  return {
    temporalAddress: `127.0.0.1:${state.temporal.ports.grpc}`,
    temporalNamespace: temporalTarget().namespace ?? state.temporal.namespace,
    temporalUiUrl: `http://127.0.0.1:${state.temporal.ports.ui}`,
    s3: s3EndpointOf(state.s3),
    managed: true,
  };
}

/**
 * The servers the environment names (endpointsFromEnv), unless they are the local servers recorded in the
 * state folder: `eval "$(starpo infra env)"` exports those for the `temporal` CLI, and `infra up|down|status`
 * and the other commands must still treat them as the local servers (restart, stop, show their processes).
 */
function externalEndpoints(opts: InfraOptions = {}): InfraEndpoints | null {
  const fromEnv = endpointsFromEnv();
  if (!fromEnv) return null;
  let local: InfraEndpoints | undefined;
  try {
    local = endpointsOf(readState(resolveStateDir(opts)));
  } catch {
    return fromEnv; // a damaged state file: the environment's servers are not the local ones anyway
  }
  const same =
    local !== undefined &&
    fromEnv.temporalAddress === local.temporalAddress &&
    fromEnv.s3.endPoint === local.s3.endPoint &&
    fromEnv.s3.port === local.s3.port;
  return same ? null : fromEnv;
}

/**
 * Starts the Temporal dev server and the S3 server on 127.0.0.1 (installing binaries into the cache
 * first when needed), waits until both are healthy (Temporal answers with the search attributes
 * registered; the bucket exists and lists), and records ports, pids and keys in `<state>/infra.json`.
 * Idempotent: servers recorded in state that still run are reused (same pids). When externalEndpoints()
 * is non-null nothing is started and those endpoints are returned (managed=false).
 * If one server fails, whatever this call started is stopped again before the error propagates.
 * @throws InfraUnavailableError when a binary can be neither found nor installed; InfraStartError when a
 *   server does not become healthy within 60 s (message holds its log tail); InfraConfigError for bad env vars.
 */
export async function infraUp(opts: InfraOptions = {}): Promise<InfraEndpoints> {
  const log = opts.log ?? (() => undefined);
  const fromEnv = externalEndpoints(opts);
  if (fromEnv) {
    log(
      `using servers from the environment: Temporal ${fromEnv.temporalAddress}, S3 ${fromEnv.s3.endPoint}:${fromEnv.s3.port} (nothing started)`,
    );
    return fromEnv;
  }
  const stateDir = resolveStateDir(opts);
  fs.mkdirSync(stateDir, { recursive: true });
  return withStateLock(stateDir, async () => {
    const state = readState(stateDir);
    const explicit = [opts.temporalPort, opts.uiPort, opts.s3Port].filter((p): p is number => p !== undefined);
    if (new Set(explicit).size !== explicit.length)
      throw new Error(`temporalPort, uiPort and s3Port must differ; got ${explicit.join(', ')}`);
    const ctx: StartContext = {
      stateDir,
      cacheDir: resolveCacheDir(opts),
      opts,
      log,
      taken: new Set(explicit),
      save: () => writeState(stateDir, state),
    };
    const started: ProcessRecord[] = [];
    try {
      const t = await ensureTemporal(state, ctx);
      if (t) started.push(t);
      const s = await ensureS3(state, ctx);
      if (s) started.push(s);
    } catch (err) {
      for (const rec of started) await stopProcess(rec, 5);
      if (state.temporal && started.includes(state.temporal.process as ProcessRecord)) state.temporal.process = null;
      if (state.s3 && started.includes(state.s3.process as ProcessRecord)) state.s3.process = null;
      writeState(stateDir, state);
      throw err;
    }
    writeState(stateDir, state);
    const endpoints = endpointsOf(state);
    if (!endpoints) throw new Error('internal: infra state incomplete after start');
    return endpoints;
  });
}

/**
 * Stops the servers infraUp started (SIGTERM, then SIGKILL after 15 s; 5 s for SeaweedFS) and marks them stopped in
 * infra.json; ports, keys and data are kept so the next infraUp serves the same data. Idempotent;
 * does nothing when endpoints come from the environment.
 */
export async function infraDown(opts: InfraOptions = {}): Promise<void> {
  const log = opts.log ?? (() => undefined);
  if (externalEndpoints(opts)) {
    log('servers come from the environment (TEMPORAL_ADDRESS, S3_ENDPOINT); nothing to stop');
    return;
  }
  const stateDir = resolveStateDir(opts);
  if (!fs.existsSync(stateDir)) {
    log(`no infra state in ${stateDir}; nothing to stop`);
    return;
  }
  await withStateLock(stateDir, async () => {
    const state = readState(stateDir);
    // SeaweedFS's filer waits 15 s for the S3 gateway's metadata stream on SIGTERM; its writes are already
    // on disk (append-only volumes, leveldb journal), so it gets a shorter grace before SIGKILL.
    const entries = [
      { name: 'Temporal dev server', holder: state.temporal, grace: 15 },
      { name: `S3 server (${state.s3?.kind ?? 'none'})`, holder: state.s3, grace: state.s3?.kind === 'seaweedfs' ? 5 : 15 },
    ];
    await Promise.all(
      entries.map(async ({ name, holder, grace }) => {
        if (!holder?.process) return;
        const how = await stopProcess(holder.process, grace);
        const said = how === 'killed' ? `stopped (SIGKILL after ${grace} s of SIGTERM)` : how;
        log(`${name} (pid ${holder.process.pid}): ${said}`);
        holder.process = null;
        if (holder === state.s3 && state.s3.kind === 'seaweedfs') removeWeedSockets(state.s3.ports);
      }),
    );
    writeState(stateDir, state);
  });
}

/** One row of infraStatus. `port` is the main TCP port. */
export interface InfraProcessStatus {
  name: string;
  pid: number;
  alive: boolean;
  port: number;
}

/**
 * Reports what infra.json records and whether those processes still run. `running` is true when both
 * servers are alive (for environment endpoints: when both answer a TCP connect within 1 s).
 * Never starts or stops anything.
 */
export async function infraStatus(
  opts: InfraOptions = {},
): Promise<{ running: boolean; endpoints?: InfraEndpoints; processes: InfraProcessStatus[] }> {
  const fromEnv = externalEndpoints(opts);
  if (fromEnv) {
    const [host, port] = fromEnv.temporalAddress.split(':');
    const up = await Promise.all([canConnect(host ?? '', Number(port)), canConnect(fromEnv.s3.endPoint, fromEnv.s3.port)]);
    return { running: up.every(Boolean), endpoints: fromEnv, processes: [] };
  }
  const stateDir = resolveStateDir(opts);
  const state = readState(stateDir);
  const processes: InfraProcessStatus[] = [];
  const add = (name: string, rec: ProcessRecord | null | undefined) => {
    if (rec) processes.push({ name, pid: rec.pid, alive: isAlive(rec), port: rec.port });
  };
  add('temporal', state.temporal?.process);
  add(state.s3?.kind ?? 's3', state.s3?.process);
  const running = processes.length === 2 && processes.every((p) => p.alive);
  return { running, endpoints: running ? endpointsOf(state) : undefined, processes };
}

/**
 * Where the servers are, for CLI commands: the environment (TEMPORAL_ADDRESS + S3_ENDPOINT, see env.ts)
 * when it names other servers than the local ones, else the local servers `starpo infra up` records. With `start`, local servers are installed and
 * started when not running.
 * @throws InfraUnavailableError when nothing is configured, nothing runs and `start` is false
 */
export async function resolveEndpoints(opts: { start: boolean; log?: (line: string) => void }): Promise<InfraEndpoints> {
  const fromEnv = externalEndpoints();
  if (fromEnv) return fromEnv;
  if (opts.start) return infraUp({ log: opts.log });
  const status = await infraStatus();
  if (status.running && status.endpoints) return status.endpoints;
  throw new InfraUnavailableError(
    'no servers: the local infra is not running; start it with `starpo infra up`, or point at running servers with TEMPORAL_ADDRESS, S3_ENDPOINT, S3_ACCESS_KEY and S3_SECRET_KEY',
    { hint: false },
  );
}
