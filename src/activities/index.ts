/**
 * The activities of starpo (contract/activities.ts StarpoActivities), built over one worker process's
 * runtime (object store + caches), and the control worker's own. Workers register these objects;
 * workflows see only the contract.
 */
import type { ControlActivities, StarpoActivities } from '../contract';
import type { ObjectStore } from '../storage/object_store';
import { prepareEvalActivity, writeEvalResultActivity } from './eval';
import { idleQueuesActivity } from './idle_queues';
import { loadRunActivity, prepareRunActivity, writeMetricsActivity } from './prepare';
import { rolloutActivity } from './rollout';
import { ActivityRuntime } from './runtime';
import { recordSweepActivity } from './sweep';
import { trackActivity } from './track';
import { updateActivity } from './update';

/** All activities, keyed by their Temporal activity type names. */
export function createActivities(store: ObjectStore): StarpoActivities {
  const rt = new ActivityRuntime(store);
  return {
    prepareRun: prepareRunActivity(rt),
    rollout: rolloutActivity(rt),
    update: updateActivity(rt),
    writeMetrics: writeMetricsActivity(rt),
    loadRun: loadRunActivity(rt),
    prepareEval: prepareEvalActivity(rt),
    writeEvalResult: writeEvalResultActivity(rt),
    recordSweep: recordSweepActivity(rt),
  };
}

/** The control worker's activities (contract/activities.ts ControlActivities). */
export function controlActivities(store: ObjectStore): ControlActivities {
  return { idleQueues: idleQueuesActivity, track: trackActivity(store) };
}
