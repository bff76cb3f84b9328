/**
 * The activity proxies of the workflows, one per task queue: heartbeats every turn or micro-batch,
 * retries without an attempt limit except for the contract's non-retryable failure types.
 * Workflow code: no I/O.
 */

import type { ActivityOptions } from '@temporalio/workflow';
import { proxyActivities } from '@temporalio/workflow';
import type { StarpoActivities } from '../contract/activities';
import { NON_RETRYABLE_ERROR_TYPES } from '../contract/errors';
import { TASK_QUEUES } from '../contract/workflow';

const common: ActivityOptions = {
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES],
  },
};

/** Activities on "starpo-rollout" (rollout workers). */
export const rollout = proxyActivities<StarpoActivities>({ ...common, taskQueue: TASK_QUEUES.rollout });

/** Activities on "starpo-update" (the update worker). */
export const update = proxyActivities<StarpoActivities>({ ...common, taskQueue: TASK_QUEUES.update });
