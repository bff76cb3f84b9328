/**
 * A run's stored metrics (runs/<run>/metrics/step-N.json, one object per step): which steps exist and
 * their contents, read a few at a time. The report and the trackers read them.
 */
import type { StepMetrics } from '../contract/activities';
import { metricsKey, parseStep, runPrefix } from './keys';
import type { ObjectStore } from './object_store';

/** Metrics objects read at once. */
const READS_IN_FLIGHT = 16;

/** One stored step: its number and when its metrics object was written. */
export interface StoredStep {
  step: number;
  lastModified?: Date;
}

/** The run's stored steps, ascending (the final validation is a step of its own, val/ keys only). */
export async function listMetricSteps(store: ObjectStore, runId: string): Promise<StoredStep[]> {
  const steps: StoredStep[] = [];
  for (const o of await store.list(`${runPrefix(runId)}metrics/`)) {
    const step = parseStep(o.key);
    if (step !== null) steps.push({ step, ...(o.lastModified ? { lastModified: o.lastModified } : {}) });
  }
  return steps.sort((a, b) => a.step - b.step);
}

/** The metrics of `steps`, in their order. */
export async function readMetrics(store: ObjectStore, runId: string, steps: readonly number[]): Promise<StepMetrics[]> {
  const out: StepMetrics[] = [];
  for (let i = 0; i < steps.length; i += READS_IN_FLIGHT) {
    out.push(
      ...(await Promise.all(steps.slice(i, i + READS_IN_FLIGHT).map((step) => store.getJson<StepMetrics>(metricsKey(runId, step))))),
    );
  }
  return out;
}
