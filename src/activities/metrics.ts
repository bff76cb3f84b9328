/** Activity `writeMetrics` (task queue "starpo-update"): stores a step's scalars at runs/<run>/metrics/step-N.json. */
import { metricsKey } from '../storage/keys';
import type { WriteMetricsInput } from '../contract';
import type { ActivityRuntime } from './runtime';

/** Builds the writeMetrics activity over a runtime. */
export function writeMetricsActivity(rt: ActivityRuntime) {
  return async function writeMetrics(input: WriteMetricsInput): Promise<void> {
    await rt.store.putJson(metricsKey(input.runId, input.step), { step: input.step, metrics: input.metrics, ...(input.compute ? { compute: input.compute } : {}) });
  };
}
