/**
 * The control worker's `track` activity: after a step's metrics are stored, writes the run's stored steps
 * that its trackers (track_with) lack (trackers/track_run.ts). Runs on the control task queue, so the
 * rollout and update workers never write to a tracker, and a tracker's failure is the workflow's to
 * tolerate (workflows/tracking.ts): it never fails the run.
 */
import { log } from '@temporalio/activity';
import type { TrackOutput } from '../contract';
import type { ObjectStore } from '../storage/object_store';
import { trackRun } from '../trackers/track_run';

/** Builds the track activity over the control worker's store. */
export function trackActivity(store: ObjectStore) {
  return async function track(runId: string): Promise<TrackOutput> {
    const reports = await trackRun(store, runId);
    for (const r of reports) {
      if (r.repairedBytes > 0)
        log.warn(`${r.tracker}: removed a cut record of ${r.repairedBytes} bytes at the end of ${r.dir} (a writer was killed mid-write)`);
    }
    return { trackers: reports.map((r) => ({ tracker: r.tracker, written: r.written, lastStep: r.lastStep })) };
  };
}
