/**
 * Bringing the Temporal dev server up, or reusing the one recorded in state.
 */
import * as path from 'node:path';
import { TEMPORAL_BINARY } from './binaries';
import { ensureBinary } from './install';
import { pickPort } from './ports';
import { isAlive, spawnDetached, waitHealthy } from './process';
import type { InfraState } from './state';
import { probeTemporal, supportsQuietUi, temporalArgs } from './temporal_server';
import type { InfraOptions, ProcessRecord } from './types';

/** What the start functions share within one infraUp call. */
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

/**
 * Makes sure a healthy dev server runs; mutates `state.temporal`.
 * @returns the record of a process started by this call, or null when a running one was reused.
 * @throws InfraUnavailableError (no binary), InfraStartError (not healthy in 60 s), Error (explicit port in use).
 */
export async function ensureTemporal(state: InfraState, ctx: StartContext): Promise<ProcessRecord | null> {
  const namespace = state.temporal?.namespace ?? 'default';
  const running = state.temporal?.process;
  if (state.temporal && running && isAlive(running)) {
    const address = `127.0.0.1:${state.temporal.ports.grpc}`;
    if (ctx.opts.temporalPort !== undefined && ctx.opts.temporalPort !== state.temporal.ports.grpc) {
      ctx.log(`note: temporalPort ${ctx.opts.temporalPort} requested, but the running server (pid ${running.pid}) uses ${state.temporal.ports.grpc}; reusing it`);
    }
    await waitHealthy('Temporal dev server', running, () => probeTemporal(address, namespace));
    ctx.log(`Temporal dev server already running (pid ${running.pid}) at ${address}`);
    for (const p of Object.values(state.temporal.ports)) ctx.taken.add(p);
    return null;
  }
  const binary = await ensureBinary(TEMPORAL_BINARY, ctx.cacheDir, ctx.log);
  const prev = state.temporal?.ports;
  const ports = {
    grpc: await pickPort('Temporal gRPC', ctx.opts.temporalPort, prev?.grpc ?? 7233, ctx.taken),
    ui: await pickPort('Temporal UI', ctx.opts.uiPort, prev?.ui ?? 8233, ctx.taken),
    http: await pickPort('Temporal HTTP', undefined, prev?.http, ctx.taken),
    metrics: await pickPort('Temporal metrics', undefined, prev?.metrics, ctx.taken),
  };
  const logFile = path.join(ctx.stateDir, 'temporal.log');
  const t0 = Date.now();
  ctx.log(`starting Temporal dev server on 127.0.0.1:${ports.grpc} (UI http://127.0.0.1:${ports.ui}), log ${logFile}`);
  const child = spawnDetached(binary, temporalArgs(ctx.stateDir, ports, namespace, await supportsQuietUi(binary)), { logFile, cwd: ctx.stateDir });
  const rec: ProcessRecord = { pid: child.pid, binary, port: ports.grpc, logFile, startedAt: new Date().toISOString() };
  state.temporal = { ports, namespace, process: rec };
  ctx.save();
  await waitHealthy('Temporal dev server', rec, () => probeTemporal(`127.0.0.1:${ports.grpc}`, namespace));
  ctx.log(`Temporal dev server healthy in ${((Date.now() - t0) / 1000).toFixed(1)} s (pid ${rec.pid})`);
  return rec;
}
