/**
 * Tells in the run's progress (the `progress` query, the UI's current details) when the phase waits on
 * a task queue no worker polls: once a phase has lasted a tick, the control worker's local activity
 * idleQueues (activities/idle_queues.ts) asks the server for the queue's pollers. The note clears when a
 * worker polls again or the phase moves on. Workflow code: deterministic, no I/O.
 */
import { condition, proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { ControlActivities } from '../contract/activities';
import type { Progress } from '../contract/workflow';
import { show } from './progress';

/**
 * Time between looks. A tick fires a timer (a few history events) only while the run is not paused, so
 * a run's history grows with its wall time by about 5 events per tick.
 */
const TICK_SECONDS = 30;

const { idleQueues } = proxyLocalActivities<ControlActivities>({ startToCloseTimeout: '20 seconds', retry: { maximumAttempts: 1 } });

/** Watches until the run is done; start it without awaiting. */
export async function watchWorkers(progress: Progress, workflowId: string): Promise<void> {
  for (;;) {
    await condition(() => progress.phase !== 'paused');
    const at = `${progress.step}:${progress.phase}`;
    await sleep(TICK_SECONDS * 1000);
    if (progress.phase === 'done') return;
    if (at !== `${progress.step}:${progress.phase}`) continue;
    let note: string | null = progress.workerNote ?? null;
    try {
      const notes = await idleQueues(workflowId);
      note = notes.length > 0 ? notes.join('; ') : null;
    } catch {
      // the server did not answer the control worker: keep the last note and look again next tick
    }
    if (note !== (progress.workerNote ?? null)) {
      progress.workerNote = note;
      show(progress);
    }
  }
}
