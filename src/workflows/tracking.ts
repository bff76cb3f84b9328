/**
 * The run's trackers (track_with): after each step's metrics are stored, the control worker's `track`
 * activity writes the stored steps the trackers lack (activities/track.ts). The loop never waits for it:
 * one call runs at a time, and a step stored meanwhile asks for one more call after it. A tracker that is
 * down costs a few bounded tries and a warning in the run's log and progress (trackerNote), never the run;
 * the next call, or `starpo track`, writes the steps it missed. Before continue-as-new and the end the
 * running call is awaited, so two calls of one run never write at once. Workflow code: no I/O.
 */
import { log, proxyActivities } from '@temporalio/workflow';
import type { ControlActivities } from '../contract/activities';
import { type Progress, TASK_QUEUES } from '../contract/workflow';
import { show } from './progress';

/**
 * On the control task queue, so only the control worker writes to a tracker. A try is bounded (the
 * activity reads at most the steps it lacks and appends them once), and so is the number of tries.
 */
const { track } = proxyActivities<ControlActivities>({
  taskQueue: TASK_QUEUES.control,
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 3, initialInterval: '2 seconds', backoffCoefficient: 2 },
});

/** Calls the track activity after stored steps, one call at a time. */
export class Tracking {
  private running: Promise<void> | null = null;
  private again = false;

  /** @param enabled whether the run has trackers (and the history was recorded with tracking) */
  constructor(
    private readonly runId: string,
    private readonly progress: Progress,
    private readonly enabled: boolean,
  ) {}

  /** A step's metrics are stored: track them (now, or after the call that runs). */
  stored(): void {
    if (!this.enabled) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.calls();
  }

  /** Waits for the running call, if any (its tries are bounded). */
  async settle(): Promise<void> {
    await this.running;
  }

  private async calls(): Promise<void> {
    do {
      this.again = false;
      await this.once();
    } while (this.again);
    this.running = null;
  }

  private async once(): Promise<void> {
    let note: string | null = null;
    try {
      await track(this.runId);
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
      note = `tracking failed (${cause}); the run goes on, the next step or \`starpo track ${this.runId}\` writes what was missed`;
      log.warn(note);
    }
    if (note !== (this.progress.trackerNote ?? null)) {
      this.progress.trackerNote = note;
      show(this.progress);
    }
  }
}
