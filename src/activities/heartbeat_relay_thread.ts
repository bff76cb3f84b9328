/**
 * The heartbeat relay's worker thread (started by heartbeat_relay.ts; runs only there). Every TICK_MS it
 * heartbeats, through its own connection (AsyncCompletionClient, by task token), for each running activity
 * that has been quiet for a quarter of its heartbeat timeout, so the server hears from it while its JS thread
 * computes. It sends the details the activity heartbeated last (progress the CLI shows; should a relayed
 * heartbeat land just after a newer one of the activity's own, the next heartbeat replaces it), and never for
 * an activity quiet for the watchdog's limit or longer (or with the watchdog off): that one is hung and must
 * time out. When the server answers that the attempt is gone, cancelled, paused or reset, the thread tells the
 * JS thread (message `stop`); it also reports the outcome of an attempt the SDK gave up on (heartbeat_relay.ts).
 */
import { writeSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { ActivityNotFoundError, AsyncCompletionClient, Connection } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TemporalAuth } from '../../infra/types';
import { LIMIT_MS } from './watchdog';

/** What heartbeat_relay.ts hands the thread. */
export interface RelayThreadData {
  /** This file (the thread's entry). */
  file: string;
  connection: { address: string } & TemporalAuth;
  namespace: string;
  /** The watchdog's shared state (watchdog.ts): its limit, live. */
  watchdog: SharedArrayBuffer;
}

/** How an attempt ended, for the server: its result, its failure, or cancelled. */
export type RelayOutcome =
  | { result: unknown }
  | { failure: { message: string; type?: string; nonRetryable: boolean } }
  | { cancelled: true };

/** To the thread: an activity starts (with the details the server holds), heartbeats (its newest details) or ends. */
export type RelayMessage =
  | { kind: 'start'; key: string; token: Uint8Array; heartbeatTimeoutMs: number; details: unknown }
  | { kind: 'beat'; key: string; details: unknown }
  | { kind: 'end'; key: string; outcome?: RelayOutcome };

/** From the thread: the server no longer wants the attempt to run. */
export interface RelayStop {
  kind: 'stop';
  key: string;
}

/** How often the thread looks at the running activities (ms). */
const TICK_MS = 250;

interface Running {
  token: Uint8Array;
  details: unknown;
  /** Quiet this long, the activity gets a relayed heartbeat, and again after as long (ms). */
  intervalMs: number;
  /** When the activity last started or heartbeated, and when the relay last sent for it (Date.now()). */
  lastBeat: number;
  lastSent: number;
  inFlight: boolean;
  warned: boolean;
  /** The server wants the attempt to stop (the JS thread was told): no more heartbeats for it. */
  stopped: boolean;
}

/** The TLS options as gRPC takes them: Buffers, which reach the thread as Uint8Arrays. */
function tlsOf(tls: TemporalAuth['tls']): TemporalAuth['tls'] {
  if (typeof tls !== 'object' || tls === null) return tls;
  const { serverRootCACertificate: ca, clientCertPair: pair } = tls;
  return {
    ...tls,
    serverRootCACertificate: ca && Buffer.from(ca),
    clientCertPair: pair && { crt: Buffer.from(pair.crt), key: Buffer.from(pair.key) },
  };
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0];
}

function relay(data: RelayThreadData, port: NonNullable<typeof parentPort>): void {
  const limit = new Int32Array(data.watchdog);
  // Lazy: a server that is down when the worker starts is reached once it is back. Connecting now keeps the
  // handshake (TLS) out of the first relayed heartbeat's deadline.
  const connection = Connection.lazy({ ...data.connection, tls: tlsOf(data.connection.tls) });
  connection.ensureConnected().catch(() => undefined);
  const client = new AsyncCompletionClient({ connection, namespace: data.namespace });
  const running = new Map<string, Running>();

  /** Reports what the SDK will not: it stopped tracking the attempt while the relay kept it alive. */
  const report = (token: Uint8Array, outcome: RelayOutcome): void => {
    const done =
      'result' in outcome
        ? client.complete(token, outcome.result)
        : 'failure' in outcome
          ? client.fail(token, ApplicationFailure.create(outcome.failure))
          : client.reportCancellation(token);
    done.catch((err) => {
      // Not found: the server timed the attempt out meanwhile and retries it.
      if (!(err instanceof ActivityNotFoundError))
        writeSync(2, `starpo heartbeat relay: reporting an attempt's outcome failed (${firstLine(err)})\n`);
    });
  };

  port.on('message', (m: RelayMessage) => {
    const now = Date.now();
    if (m.kind === 'start') {
      const intervalMs = m.heartbeatTimeoutMs / 4;
      running.set(m.key, {
        token: m.token,
        details: m.details,
        intervalMs,
        lastBeat: now,
        lastSent: now,
        inFlight: false,
        warned: false,
        stopped: false,
      });
    } else if (m.kind === 'beat') {
      const r = running.get(m.key);
      if (r) Object.assign(r, { details: m.details, lastBeat: now });
    } else {
      const r = running.get(m.key);
      running.delete(m.key);
      if (r && m.outcome) report(r.token, m.outcome);
    }
  });

  const send = (key: string, r: Running, now: number): void => {
    r.inFlight = true;
    r.lastSent = now;
    connection
      .withDeadline(now + 4 * r.intervalMs, () => client.heartbeat(r.token, r.details))
      .catch((err: Error) => {
        // Not found (the attempt ended: timed out, its run closed), cancelled, paused or reset: the activity stops.
        if (
          err instanceof ActivityNotFoundError ||
          ['ActivityCancelledError', 'ActivityPausedError', 'ActivityResetError'].includes(err.name)
        ) {
          r.stopped = true;
          port.postMessage({ kind: 'stop', key } satisfies RelayStop);
        } else if (!r.warned) {
          r.warned = true;
          writeSync(2, `starpo heartbeat relay: a heartbeat failed (${firstLine(err)}); retrying every ${r.intervalMs} ms\n`);
        }
      })
      .finally(() => {
        r.inFlight = false;
      });
  };

  setInterval(() => {
    const now = Date.now();
    const limitMs = Atomics.load(limit, LIMIT_MS);
    for (const [key, r] of running) {
      const quiet = now - r.lastBeat;
      if (limitMs === 0 || quiet >= limitMs || r.inFlight || r.stopped) continue;
      if (quiet >= r.intervalMs && now - r.lastSent >= r.intervalMs) send(key, r, now);
    }
  }, TICK_MS);
}

if (parentPort) relay(workerData as RelayThreadData, parentPort);
