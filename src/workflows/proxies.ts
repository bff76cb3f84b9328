/**
 * The activity proxies of the workflows, one per task queue: the heartbeat timeout of the run's config
 * (heartbeat_timeout_seconds; activities heartbeat every turn or micro-batch, and a relay thread of the
 * worker heartbeats for them while they compute, docs/durability.md "Liveness"), retries without an attempt
 * limit except for the contract's non-retryable failure types. Workflow code: no I/O.
 */

import type { ActivityInterfaceFor, ActivityOptions } from '@temporalio/workflow';
import { proxyActivities } from '@temporalio/workflow';
import type { StarpoActivities } from '../contract/activities';
import { NON_RETRYABLE_ERROR_TYPES } from '../contract/errors';
import { HEARTBEAT_TIMEOUT_DEFAULT_SECONDS } from '../contract/liveness';
import type { RunConfig } from '../contract/run_config';
import { TASK_QUEUES } from '../contract/workflow';

/** The proxies of the activities on "starpo-rollout" (rollout workers) and "starpo-update" (the update worker). */
export interface ActivityProxies {
  rollout: ActivityInterfaceFor<StarpoActivities>;
  update: ActivityInterfaceFor<StarpoActivities>;
}

/**
 * The proxies for a run's config; without one (before the config is known: loadRun, prepareEval) or for a
 * config stored before the key existed, the default heartbeat timeout. The timeout is not part of what a
 * replay compares, so recorded histories replay whatever it was.
 */
export function activityProxies(config?: Partial<Pick<RunConfig, 'heartbeat_timeout_seconds'>>): ActivityProxies {
  const common: ActivityOptions = {
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: (config?.heartbeat_timeout_seconds ?? HEARTBEAT_TIMEOUT_DEFAULT_SECONDS) * 1000,
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES],
    },
  };
  return {
    rollout: proxyActivities<StarpoActivities>({ ...common, taskQueue: TASK_QUEUES.rollout }),
    update: proxyActivities<StarpoActivities>({ ...common, taskQueue: TASK_QUEUES.update }),
  };
}
