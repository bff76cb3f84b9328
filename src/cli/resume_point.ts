/**
 * Where `starpo resume` restarts a closed run (and a resumed sweep its unfinished runs): the newest
 * complete checkpoint, with the validation curve of the executions before, so a run's curve (its
 * summary, its result's validationCurve) is the whole run's and not only the last execution's.
 */
import type { RunSpec, ValidationPoint } from '../contract';
import { loadMetrics } from '../report/run_data';
import { readLatestComplete } from '../storage/checkpoint';
import type { ObjectStore } from '../storage/object_store';

/** The validation points stored in a run's metrics (metrics/step-N.json val/env/success) up to `step`. */
export async function storedValidationCurve(store: ObjectStore, runId: string, step: number): Promise<ValidationPoint[]> {
  return (await loadMetrics(store, runId)).flatMap(({ step: at, metrics }) => {
    const success = metrics['val/env/success'];
    return at <= step && typeof success === 'number' ? [{ step: at, success }] : [];
  });
}

/** The resume point of a run, or null when it has no complete checkpoint. */
export async function resumePoint(store: ObjectStore, runId: string, log: (line: string) => void): Promise<RunSpec['resumeFrom'] | null> {
  const latest = await readLatestComplete(store, runId, log);
  if (!latest) return null;
  return { checkpoint: latest.ref, step: latest.step, validationCurve: await storedValidationCurve(store, runId, latest.step) };
}
