/**
 * Which task queues a workflow waits on that no worker polls, from what the Temporal server holds: the
 * workflow's pending activities and workflow task (describe) and each queue's pollers
 * (DescribeTaskQueue). Used by `starpo status`, the progress line of `train`/`resume`, and, as the
 * control worker's local activity, by the workflow for its current details in the UI.
 */
import { Context } from '@temporalio/activity';
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import { TASK_QUEUES } from '../contract';

/**
 * A worker polls its queue again at most about a minute after its last poll while it is idle (the
 * server holds a poll open that long), and the server keeps a gone worker in the pollers list for
 * minutes; so a queue counts as without a worker once no poller has been seen for this long.
 */
export const POLL_GRACE_SECONDS = 70;

/** Values of Temporal's enums PendingActivityState / PendingWorkflowTaskState (STARTED) and TaskQueueType. */
export const STARTED = 2;
const QUEUE_TYPE = { workflow: 1, activity: 2 } as const;

/** A queue a workflow waits on: its name and whether workflow or activity tasks wait there. */
interface WaitedQueue {
  name: string;
  kind: 'workflow' | 'activity';
}

/** The role of `starpo worker --role` that polls a queue. */
function roleOf(queue: WaitedQueue): string {
  if (queue.kind === 'workflow') return 'control';
  if (queue.name === TASK_QUEUES.rollout) return 'rollout';
  if (queue.name === TASK_QUEUES.update) return 'update';
  return 'all';
}

/**
 * The queues with a task not yet taken by a worker: pending activities that are scheduled (or waiting
 * to retry) rather than started (a started one has a worker, and its heartbeat timeout notices when that
 * worker goes), and a workflow task not started. `control` adds the workflow's queue (a query no control
 * worker answered).
 */
export function waitedQueues(d: WorkflowExecutionDescription, control = false): WaitedQueue[] {
  const queues: WaitedQueue[] = [];
  const add = (q: WaitedQueue) => {
    if (!queues.some((o) => o.name === q.name && o.kind === q.kind)) queues.push(q);
  };
  const workflowQueue = d.taskQueue;
  const wft = d.raw.pendingWorkflowTask;
  if (control || (wft && wft.state !== STARTED)) add({ name: workflowQueue, kind: 'workflow' });
  for (const a of d.raw.pendingActivities ?? []) {
    const name = a.activityOptions?.taskQueue?.name;
    if (name && a.state !== STARTED) add({ name, kind: 'activity' });
  }
  return queues;
}

/** The phase a workflow is in, read from its pending activities (for a run whose control worker does not answer). */
export function pendingPhase(d: WorkflowExecutionDescription): string {
  const types = new Set((d.raw.pendingActivities ?? []).map((a) => a.activityType?.name));
  if (types.has('prepareRun') || types.has('loadRun')) return 'preparing';
  if (types.has('update') || types.has('writeMetrics')) return 'update';
  if (types.has('rollout')) return 'rollout or validation';
  return 'waiting for a control worker';
}

/** Whether a worker has polled `queue` within POLL_GRACE_SECONDS before `now`. */
async function polled(client: Client, namespace: string, queue: WaitedQueue, now: number): Promise<boolean> {
  const { pollers } = await client.workflowService.describeTaskQueue({
    namespace,
    taskQueue: { name: queue.name },
    taskQueueType: QUEUE_TYPE[queue.kind],
  });
  return (pollers ?? []).some((p) => Number(p.lastAccessTime?.seconds ?? 0) * 1000 > now - POLL_GRACE_SECONDS * 1000);
}

/**
 * Notes naming each queue the workflow waits on that no worker has polled for POLL_GRACE_SECONDS, and
 * how to start one, e.g. "no worker polls task queue starpo-rollout (none seen for 70 s); start one
 * with: starpo worker --role rollout, or starpo resume <runId>".
 */
export async function idleQueues(client: Client, d: WorkflowExecutionDescription, control = false, now = Date.now()): Promise<string[]> {
  const notes: string[] = [];
  for (const queue of waitedQueues(d, control)) {
    if (await polled(client, client.options.namespace, queue, now)) continue;
    notes.push(
      `no worker polls task queue ${queue.name} (none seen for ${POLL_GRACE_SECONDS} s); start one with: starpo worker --role ${roleOf(queue)}, or starpo resume ${d.workflowId}`,
    );
  }
  return notes;
}

/** The idleQueues activity of the control worker (its client is the worker's). */
export async function idleQueuesActivity(workflowId: string): Promise<string[]> {
  const client = Context.current().client;
  return idleQueues(client, await client.workflow.getHandle(workflowId).describe());
}
