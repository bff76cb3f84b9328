/**
 * Worker entry points by role: `control` polls the workflow task queue "starpo", `rollout` runs rollout
 * activities on "starpo-rollout", `update` the update and the run's records on "starpo-update", `all` the
 * three in one process (tfjs work blocks the event loop, so production keeps roles apart). Liveness and
 * shutdown are told in docs/durability.md.
 */
import { DefaultLogger, type LogLevel, type LogMetadata, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { temporalConnectOptions } from '../../infra/temporal_profile';
import type { InfraEndpoints } from '../../infra/types';
import { controlActivities, createActivities } from '../activities';
import { startHeartbeatRelay } from '../activities/heartbeat_relay';
import { BACKEND_LOST_EXIT_CODE, backendMemoryGuard } from '../activities/out_of_memory';
import { startWatchdog } from '../activities/watchdog';
import type { Role } from '../contract';
import { TASK_QUEUES, WATCHDOG_DEFAULT_SECONDS } from '../contract';
import { backendInfo, initBackend } from '../model/backend';
import { defaultBackend, hostBackends } from '../model/backend_choice';
import { ObjectStore } from '../storage/object_store';

/**
 * SDK log lines that are expected and say nothing wrong: a role's worker does not poll the other kind of
 * task, and webpack's report of the workflow bundle it built. A new user took them for alarms.
 */
const EXPECTED_LINES = [
  /^No (workflows|activities|Nexus services) registered, not polling/,
  /^[\s\S]*webpack [\d.]+ compiled successfully/,
];

/** The SDK's logger without EXPECTED_LINES. */
class QuietLogger extends DefaultLogger {
  override log(level: LogLevel, message: string, meta?: LogMetadata): void {
    if (!EXPECTED_LINES.some((r) => r.test(message))) super.log(level, message, meta);
  }
}

/** How long a shutting-down worker lets running activities finish (Worker shutdownGraceTime). */
const SHUTDOWN_GRACE = '30 seconds';

/**
 * At most this long between heartbeats sent to the server (Worker maxHeartbeatThrottleInterval; the SDK
 * default throttles to 80% of the 30 s heartbeat timeout), so the progress the CLI reads from pending
 * activities' heartbeat details (the warm-up bar, cli/attach.ts) is at most 2 s old.
 */
const HEARTBEAT_THROTTLE = '2 seconds';

/**
 * Runs `attempt` until it succeeds, waiting 1, 2, 4 .. 15 s between failures and logging each one,
 * for at most `seconds`. @throws the last error once the time is up.
 */
async function untilUp<T>(what: string, attempt: () => Promise<T>, log: (line: string) => void, seconds = 300): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (let wait = 1; ; wait = Math.min(15, wait * 2)) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() + wait * 1000 > deadline) throw err;
      log(`${what} not reachable (${(err as Error).message.split('\n')[0]}); retrying in ${wait} s`);
      await new Promise((r) => setTimeout(r, wait * 1000));
    }
  }
}

/**
 * Connects to Temporal and the object store (waiting up to 5 minutes for each, so a worker started while a
 * server restarts waits for it) and runs the role's workers until SIGINT/SIGTERM. Then polling stops at
 * once and a running activity gets SHUTDOWN_GRACE to finish; one still running after that is cancelled at
 * its next heartbeat (activities/runtime.ts) and fails, so the server retries it at once on another worker.
 * Rollout and update workers run the activity watchdog (activities/watchdog.ts) and the heartbeat relay
 * (activities/heartbeat_relay.ts). When an activity's backend runs out of memory (activities/out_of_memory.ts),
 * every worker of the process shuts down as for SIGTERM and the process's exit code is BACKEND_LOST_EXIT_CODE,
 * so its supervisor starts it again with a clean backend.
 * @throws Error when Temporal or the object store stays unreachable
 */
export async function runWorkers(role: Role, endpoints: InfraEndpoints, log: (line: string) => void = console.log): Promise<void> {
  Runtime.install({ logger: new QuietLogger('INFO') });
  const connection = await untilUp(
    `Temporal at ${endpoints.temporalAddress}`,
    () => NativeConnection.connect(temporalConnectOptions(endpoints)),
    log,
  );
  const namespace = endpoints.temporalNamespace;
  const workers: Worker[] = [];
  const wants = (r: Role) => role === 'all' || role === r;
  const shutdownGraceTime = SHUTDOWN_GRACE;
  const maxHeartbeatThrottleInterval = HEARTBEAT_THROTTLE;
  // Every role reads the store: the control worker's track activity reads the stored metrics.
  const store = new ObjectStore(endpoints.s3);
  await untilUp(`S3 at ${endpoints.s3.endPoint}:${endpoints.s3.port}`, () => store.ensureBucket(), log);
  if (wants('rollout') || wants('update')) {
    // A process serving both roles computes the update's way: the update is the heavier of the two.
    await initBackend(defaultBackend(role === 'rollout' ? 'rollout' : 'update', hostBackends()));
    const { backend, device } = backendInfo();
    log(`tfjs backend: ${backend} (${device})`);
    const activities = createActivities(store);
    const watchdog = startWatchdog(WATCHDOG_DEFAULT_SECONDS);
    const backendLost = () => {
      if (process.exitCode === BACKEND_LOST_EXIT_CODE) return;
      process.exitCode = BACKEND_LOST_EXIT_CODE;
      log(
        `the ${backendInfo().backend} backend ran out of memory: this worker process takes no more tasks and exits (code ${BACKEND_LOST_EXIT_CODE}) to be started again clean`,
      );
      for (const w of workers) w.shutdown();
    };
    // Innermost, so the watchdog and the relay see the failure it makes of the error.
    const interceptors = {
      activity: [watchdog, startHeartbeatRelay(temporalConnectOptions(endpoints), namespace), backendMemoryGuard(backendLost)],
    };
    if (wants('rollout')) {
      workers.push(
        await Worker.create({
          connection,
          namespace,
          taskQueue: TASK_QUEUES.rollout,
          activities,
          shutdownGraceTime,
          maxHeartbeatThrottleInterval,
          maxConcurrentActivityTaskExecutions: 1,
          interceptors,
        }),
      );
    }
    if (wants('update')) {
      workers.push(
        await Worker.create({
          connection,
          namespace,
          taskQueue: TASK_QUEUES.update,
          activities,
          shutdownGraceTime,
          maxHeartbeatThrottleInterval,
          maxConcurrentActivityTaskExecutions: 1,
          interceptors,
        }),
      );
    }
  }
  if (wants('control')) {
    workers.push(
      await Worker.create({
        connection,
        namespace,
        taskQueue: TASK_QUEUES.control,
        workflowsPath: require.resolve('../workflows'),
        activities: controlActivities(store),
        shutdownGraceTime,
      }),
    );
  }
  log(`starpo worker (${role}) polling ${workers.map((w) => w.options.taskQueue).join(', ')} on ${endpoints.temporalAddress}`);
  try {
    await Promise.all(workers.map((w) => w.run()));
  } finally {
    await connection.close();
  }
}
