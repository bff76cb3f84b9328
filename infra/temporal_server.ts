/**
 * The Temporal CLI dev server: its command line (`temporal server start-dev --db-filename ... --ip
 * 127.0.0.1`, UI on :8233) and its health check.
 */
import * as path from 'node:path';
import { runCommand } from './command';
import type { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from './search_attributes';

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
    'server', 'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(ports.grpc),
    '--ui-port', String(ports.ui),
    '--http-port', String(ports.http),
    '--metrics-port', String(ports.metrics),
    '--db-filename', path.join(stateDir, 'temporal.db'),
    '--log-level', 'warn',
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
