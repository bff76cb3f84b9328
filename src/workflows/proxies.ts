/**
 * The activity proxies of the workflows: one per task queue, with the retry and timeout policy of
 * DESIGN.md (heartbeats every turn or micro-batch, retries without an attempt limit, the project's
 * non-retryable error types). Workflow code: no I/O.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { TASK_QUEUES } from './api';

const common: ActivityOptions = {
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', nonRetryableErrorTypes: ['ConfigError', 'CorruptObjectError', 'InvalidKeyPartError'] },
};

/** Activities on "starpo-rollout" (rollout workers). */
export const rollout = proxyActivities<Activities>({ ...common, taskQueue: TASK_QUEUES.rollout });

/** Activities on "starpo-update" (the update worker). */
export const update = proxyActivities<Activities>({ ...common, taskQueue: TASK_QUEUES.update });
