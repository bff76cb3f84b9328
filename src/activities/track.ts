/**
 * The control worker's `track` activity: after a step's metrics are stored, writes the run's stored steps
 * that its trackers (track_with) lack (trackers/track_run.ts); the run's last call also logs the report
 * where a tracker keeps it (mlflow). Runs on the control task queue, so the rollout and update workers never
 * write to a tracker, and a tracker's failure is the workflow's to tolerate (workflows/tracking.ts): it
 * never fails the run.
 */
import { log } from '@temporalio/activity';
import type { TrackEnd, TrackOutput } from '../contract';
import type { ObjectStore } from '../storage/object_store';
import type { RunEnd } from '../trackers/mlflow';
import { trackRun } from '../trackers/track_run';

/** Train steps in the trajectory browser of a tracker's report (as `starpo report`'s default). */
const REPORT_TRAJECTORY_STEPS = 50;

/** `end` with the run's report, built only when a tracker logs it (the report's charting loads on first use). */
export function runEnd(store: ObjectStore, end: TrackEnd, warn: (line: string) => void): RunEnd {
  return {
    ...end,
    report: (spec) => {
      const { buildReport } = require('../report/build') as typeof import('../report/build');
      return buildReport(store, spec, { trajectorySteps: REPORT_TRAJECTORY_STEPS, state: end.state, warn });
    },
  };
}

/** Builds the track activity over the control worker's store. */
export function trackActivity(store: ObjectStore) {
  return async function track(runId: string, end?: TrackEnd): Promise<TrackOutput> {
    const reports = await trackRun(store, runId, undefined, end && runEnd(store, end, (line) => log.warn(line)));
    for (const r of reports) {
      if (r.repairedBytes > 0)
        log.warn(`${r.tracker}: removed a cut record of ${r.repairedBytes} bytes at the end of ${r.where} (a writer was killed mid-write)`);
    }
    return { trackers: reports.map((r) => ({ tracker: r.tracker, written: r.written, lastStep: r.lastStep })) };
  };
}
