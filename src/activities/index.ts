/**
 * The activities of starpo, built over one worker process's runtime (object store + caches).
 * The workflow imports only the TYPE of `createActivities` (DESIGN.md).
 */
import type { ObjectStore } from '../storage/object_store';
import { ActivityRuntime } from './runtime';
import { prepareRunActivity } from './prepare';
import { rolloutActivity } from './rollout';
import { updateActivity } from './update';
import { writeMetricsActivity } from './metrics';
import { loadRunActivity } from './load_run';
import { prepareEvalActivity, writeEvalResultActivity } from './eval';

/** All activities, keyed by their Temporal activity type names. */
export function createActivities(store: ObjectStore) {
  const rt = new ActivityRuntime(store);
  return {
    prepareRun: prepareRunActivity(rt),
    rollout: rolloutActivity(rt),
    update: updateActivity(rt),
    writeMetrics: writeMetricsActivity(rt),
    loadRun: loadRunActivity(rt),
    prepareEval: prepareEvalActivity(rt),
    writeEvalResult: writeEvalResultActivity(rt),
  };
}

/** The activity interface the workflow proxies. */
export type Activities = ReturnType<typeof createActivities>;
