/**
 * The heartbeat relay of a worker process: while an activity computes on the JS thread (a tfjs micro-batch, a
 * long prefill), nothing of that thread runs, so the SDK sends none of its heartbeats. A worker thread with its
 * own Temporal connection (heartbeat_relay_thread.ts) heartbeats for each running activity, with the details
 * the activity gave last, while the activity's last heartbeat is younger than the watchdog's limit
 * (watchdog_seconds). Past it the relay stops: a hung computation then fails by heartbeat timeout and the
 * watchdog (watchdog.ts) ends the process, as before. docs/durability.md, "Liveness".
 */
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { TemporalAuth } from '../../infra/types';
import type { RelayMessage, RelayThreadData } from './heartbeat_relay_thread';
import { watchdogState } from './watchdog';

/** The thread runs TypeScript the way bin/starpo.js does (tsx), from the file beside this one. */
const BOOT = `require('tsx/cjs/api').register(); require(require('node:worker_threads').workerData.file);`;

let thread: Worker | null = null;

/**
 * Hands the relay the details an activity heartbeats (runtime.ts heartbeat); each also counts as the
 * activity's sign of life. A no-op without a relay.
 */
export function relayHeartbeat(base64TaskToken: string, details: unknown): void {
  thread?.postMessage({ kind: 'beat', key: base64TaskToken, details } satisfies RelayMessage);
}

/**
 * Starts the relay thread of this process (once; after startWatchdog, whose limit it follows).
 * @param connection the options of the worker's own Temporal connection (address, TLS, API key, metadata)
 * @param namespace the worker's namespace
 * @returns the activity interceptor factory that registers running activities (Worker option interceptors.activity)
 * @throws Error when the watchdog has not been started
 */
export function startHeartbeatRelay(connection: { address: string } & TemporalAuth, namespace: string): ActivityInterceptorsFactory {
  const watchdog = watchdogState();
  if (!watchdog) throw new Error('startHeartbeatRelay: start the watchdog first (startWatchdog)');
  if (!thread) {
    const workerData: RelayThreadData = { file: join(__dirname, 'heartbeat_relay_thread.ts'), connection, namespace, watchdog };
    thread = new Worker(BOOT, { eval: true, workerData });
    // Without the relay the activities still heartbeat between computations, as they did before it.
    thread.on('error', (err) => console.error(`starpo heartbeat relay stopped: ${err.message}`));
    thread.unref();
  }
  const relay = thread;
  const post = (message: RelayMessage) => relay.postMessage(message);
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const { base64TaskToken: key, taskToken: token, heartbeatTimeoutMs, heartbeatDetails } = ctx.info;
        if (!heartbeatTimeoutMs) return next(input);
        // Until the activity heartbeats, relay what the server holds: the previous attempt's details.
        post({ kind: 'start', key, token, heartbeatTimeoutMs, details: heartbeatDetails });
        try {
          return await next(input);
        } finally {
          post({ kind: 'end', key });
        }
      },
    },
  });
}
