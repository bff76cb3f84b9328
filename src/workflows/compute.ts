/**
 * Where a step computed: the backend and device of its rollout shards and of its update, as the activities
 * reported them, and their one-line text for the UI's current details, `starpo status` and the report.
 * Pure; safe in workflow code.
 */
import type { ComputeInfo, RolloutOutput, StepCompute, UpdateOutput } from '../activities/types';

/** The distinct backends of a step's rollout shards (in shard order) and its update's. */
export function stepCompute(rollouts: RolloutOutput[], updated: UpdateOutput): StepCompute {
  const rollout: ComputeInfo[] = [];
  for (const { compute } of rollouts) {
    if (compute && !rollout.some((c) => c.backend === compute.backend && c.device === compute.device)) rollout.push(compute);
  }
  return { rollout, update: updated.compute ?? null };
}

/** e.g. "tensorflow (CPU)". */
function computeText(c: ComputeInfo): string {
  return `${c.backend} (${c.device})`;
}

/** e.g. "rollout wasm (CPU), update tensorflow (CPU)"; '-' for a part not recorded. */
export function describeCompute(c: StepCompute): string {
  const rollout = c.rollout.length > 0 ? c.rollout.map(computeText).join(' + ') : '-';
  return `rollout ${rollout}, update ${c.update ? computeText(c.update) : '-'}`;
}
