/**
 * The heartbeat relay of a worker process: while an activity computes on the JS thread (a tfjs micro-batch, a
 * long prefill), nothing of that thread runs, so the SDK sends none of its heartbeats. A worker thread with its
 * own Temporal connection (heartbeat_relay_thread.ts) heartbeats for each running activity, with the details
 * the activity gave last, while the activity's last heartbeat is younger than the watchdog's limit
 * (watchdog_seconds). Past it the relay stops: a hung computation then fails by heartbeat timeout and the
 * watchdog (watchdog.ts) ends the process, as before.
 *
 * The SDK also times an activity out by itself when the JS thread has not heartbeated for the heartbeat
 * timeout plus a few seconds: it cancels the activity (cancellationDetails.timedOut) and drops its outcome. With
 * the relay that attempt is still alive on the server, so the activity goes on (runtime.ts heartbeat asks
 * mustStop) and the relay reports its outcome by task token. docs/durability.md, "Liveness".
 */
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Context } from '@temporalio/activity';
import { ensureApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { TemporalAuth } from '../../infra/types';
import type { RelayMessage, RelayOutcome, RelayStop, RelayThreadData } from './heartbeat_relay_thread';
import { watchdogState } from './watchdog';

/** The thread runs TypeScript the way bin/starpo.js does (tsx), from the file beside this one. */
const BOOT = `require('tsx/cjs/api').register(); require(require('node:worker_threads').workerData.file);`;

let thread: Worker | null = null;
/** Task tokens (base64) of attempts the server no longer wants to run, as the relay heard it. */
const stopped = new Set<string>();

/**
 * Hands the relay the details an activity heartbeats (runtime.ts heartbeat); each also counts as the
 * activity's sign of life. A no-op without a relay.
 */
export function relayHeartbeat(base64TaskToken: string, details: unknown): void {
  thread?.postMessage({ kind: 'beat', key: base64TaskToken, details } satisfies RelayMessage);
}

/**
 * Whether a cancelled activity must stop: always, unless only the SDK's own timer cancelled it while the relay
 * keeps the attempt alive (and the relay has not heard otherwise from the server).
 */
export function mustStop(context: Context): boolean {
  if (!context.cancellationSignal.aborted) return false;
  return !thread || !context.cancellationDetails?.timedOut || stopped.has(context.info.base64TaskToken);
}

/** The outcome of an activity that threw, as the server gets it from the SDK. */
function thrown(err: unknown, context: Context): RelayOutcome {
  if (context.cancellationSignal.aborted && err === context.cancellationSignal.reason) return { cancelled: true };
  const { message, type, nonRetryable } = ensureApplicationFailure(err);
  return { failure: { message, type: type ?? undefined, nonRetryable: nonRetryable === true } };
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
    thread.on('message', (m: RelayStop) => stopped.add(m.key));
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
        // The SDK reports the outcome unless its own timer gave the attempt up (then the relay does).
        const givenUp = () => ctx.cancellationDetails?.timedOut === true;
        try {
          const result = await next(input);
          post({ kind: 'end', key, ...(givenUp() ? { outcome: { result } } : {}) });
          return result;
        } catch (err) {
          post({ kind: 'end', key, ...(givenUp() ? { outcome: thrown(err, ctx) } : {}) });
          throw err;
        } finally {
          stopped.delete(key);
        }
      },
    },
  });
}
