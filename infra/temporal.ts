/**
 * The Temporal CLI dev server: its command line (`temporal server start-dev --db-filename ... --ip
 * 127.0.0.1`, UI on :8233), its health check, and bringing it up or reusing the one recorded in state.
 */
import * as path from 'node:path';
import type { Connection } from '@temporalio/client';
import { TEMPORAL_BINARY } from './binaries';
import { runCommand } from './command';
import { ensureBinary } from './install';
import { pickPort } from './ports';
import { isAlive, spawnDetached, waitHealthy } from './process';
import { SEARCH_ATTRIBUTES } from './search_attributes';
import type { InfraState, StartContext } from './state';
import type { ProcessRecord } from './types';

/** Ports of one dev server (TCP, all on 127.0.0.1). */
export interface TemporalPorts {
  grpc: number;
  ui: number;
  http: number;
  metrics: number;
}

/**
 * argv (after the binary) of `temporal server start-dev` with state in `stateDir/temporal.db`.
 * @param quietUi pass `--ui-disable-news-fetch` (CLI >= 1.6; the Go-built fallback v1.5.1 lacks it).
 */
export function temporalArgs(stateDir: string, ports: TemporalPorts, namespace: string, quietUi = true): string[] {
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(ports.grpc),
    '--ui-port',
    String(ports.ui),
    '--http-port',
    String(ports.http),
    '--metrics-port',
    String(ports.metrics),
    '--db-filename',
    path.join(stateDir, 'temporal.db'),
    '--log-level',
    'warn',
  ];
  if (quietUi) args.push('--ui-disable-news-fetch');
  if (namespace !== 'default') args.push('--namespace', namespace);
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${name}=${type}`);
  return args;
}

/**
 * One health probe: the frontend answers GetSystemInfo and every SEARCH_ATTRIBUTES entry is registered
 * in `namespace`. Resolves to null when healthy, else a one-line reason.
 */
export async function probeTemporal(address: string, namespace: string): Promise<string | null> {
  const { Connection: TemporalConnection } = require('@temporalio/client') as typeof import('@temporalio/client'); // lazy: every CLI start loads this file
  let conn: Connection | undefined;
  try {
    conn = await TemporalConnection.connect({ address, connectTimeout: '3s' });
    await conn.workflowService.getSystemInfo({});
    const res = await conn.operatorService.listSearchAttributes({ namespace });
    const have = res.customAttributes ?? {};
    const missing = Object.keys(SEARCH_ATTRIBUTES).filter((n) => !(n in have));
    return missing.length ? `search attributes not registered yet: ${missing.join(', ')}` : null;
  } catch (err) {
    return `Temporal at ${address} not reachable: ${(err as Error).message.split('\n')[0]}`;
  } finally {
    await conn?.close().catch(() => undefined);
  }
}

/** true when this `temporal` binary knows `--ui-disable-news-fetch` (asks its `server start-dev --help`). */
export async function supportsQuietUi(binary: string): Promise<boolean> {
  const res = await runCommand(binary, ['server', 'start-dev', '--help'], { timeoutSeconds: 30, maxChars: 1_000_000 });
  return res.tail.includes('--ui-disable-news-fetch');
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
      ctx.log(
        `note: temporalPort ${ctx.opts.temporalPort} requested, but the running server (pid ${running.pid}) uses ${state.temporal.ports.grpc}; reusing it`,
      );
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
  const child = spawnDetached(binary, temporalArgs(ctx.stateDir, ports, namespace, await supportsQuietUi(binary)), {
    logFile,
    cwd: ctx.stateDir,
  });
  const rec: ProcessRecord = { pid: child.pid, binary, port: ports.grpc, logFile, startedAt: new Date().toISOString() };
  state.temporal = { ports, namespace, process: rec };
  ctx.save();
  await waitHealthy('Temporal dev server', rec, () => probeTemporal(`127.0.0.1:${ports.grpc}`, namespace));
  ctx.log(`Temporal dev server healthy in ${((Date.now() - t0) / 1000).toFixed(1)} s (pid ${rec.pid})`);
  return rec;
}
