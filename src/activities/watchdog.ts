/**
 * The activity watchdog of a worker process: an activity that makes no progress for `watchdog_seconds` ends
 * its process (SIGALRM), so its attempt fails by heartbeat timeout and Temporal retries it on a fresh one.
 * The watch runs in a worker thread because a hang can be a synchronous loop in the JS thread, where no
 * timer of that thread fires; activities count progress in shared memory (runtime.ts heartbeat).
 */
import { Worker } from 'node:worker_threads';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';

/** The signal the watchdog ends its process with (cli/spawn_workers.ts restarts a worker that died of it). */
export const WATCHDOG_SIGNAL = 'SIGALRM';

/** Int32 slots of the shared state: progress counter, running activities, limit (ms; 0 = off). */
const PROGRESS = 0;
const ACTIVE = 1;
/** Also read by the heartbeat relay's thread, which relays no longer than the watchdog lets an activity run. */
export const LIMIT_MS = 2;

/** The watching thread: polls the shared state every `pollMs` (plain JS, run with eval). */
const THREAD = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const state = new Int32Array(workerData.buffer);
let seen = Atomics.load(state, ${PROGRESS});
let since = Date.now();
setInterval(() => {
  const now = Date.now();
  const progress = Atomics.load(state, ${PROGRESS});
  if (progress !== seen || Atomics.load(state, ${ACTIVE}) === 0) { seen = progress; since = now; return; }
  const limit = Atomics.load(state, ${LIMIT_MS});
  if (limit > 0 && now - since >= limit) {
    writeSync(2, 'starpo watchdog: no activity progress for ' + Math.round((now - since) / 1000) + ' s (watchdog_seconds ' +
      limit / 1000 + '); ending worker process ' + process.pid + ' with ${WATCHDOG_SIGNAL} so Temporal retries the attempt on a fresh process\\n');
    process.kill(process.pid, '${WATCHDOG_SIGNAL}');
  }
}, workerData.pollMs);
`;

let state: Int32Array | null = null;

/** The shared state of this process's watchdog (Int32 slots above), or null before startWatchdog. */
export function watchdogState(): SharedArrayBuffer | null {
  return state ? (state.buffer as SharedArrayBuffer) : null;
}

/** Counts one unit of progress of the running activity (a heartbeat, a micro-batch); a no-op without a watchdog. */
export function reportProgress(): void {
  if (state) Atomics.add(state, PROGRESS, 1);
}

/**
 * Sets the stall limit for the activities of this process (the run config's watchdog_seconds, read when an
 * activity loads its run; activities/runtime.ts). A no-op without a watchdog.
 * @param seconds > 0, or 0 to switch the watch off
 */
export function setWatchdogLimit(seconds: number): void {
  if (state) Atomics.store(state, LIMIT_MS, Math.round(seconds * 1000));
}

/**
 * Starts the watching thread of this process (once; later calls return the same interceptor factory).
 * @param defaultSeconds the limit until an activity sets its run's (0 = off)
 * @param pollMs how often the thread looks (ms)
 * @returns the activity interceptor factory that marks activities as running (Worker option interceptors.activity)
 */
export function startWatchdog(defaultSeconds: number, pollMs = 1000): ActivityInterceptorsFactory {
  if (!state) {
    state = new Int32Array(new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT));
    setWatchdogLimit(defaultSeconds);
    new Worker(THREAD, { eval: true, workerData: { buffer: state.buffer, pollMs } }).unref();
  }
  const shared = state;
  return () => ({
    inbound: {
      async execute(input, next) {
        Atomics.add(shared, PROGRESS, 1);
        Atomics.add(shared, ACTIVE, 1);
        try {
          return await next(input);
        } finally {
          Atomics.sub(shared, ACTIVE, 1);
          Atomics.add(shared, PROGRESS, 1);
        }
      },
    },
  });
}
