/**
 * The `collapse_guard` option (starpo's own key; RAGEN's "Echo Trap", docs/numerics.md §7): in-group reward
 * std drops first, then token entropy; when both stay below their floors for `patience` consecutive
 * steps the run is stopped or an alert is raised. Pure and deterministic (runs inside the workflow).
 */
import type { RunConfig } from '../contract/run_config';

/** The guard's verdict for one step. */
export interface CollapseVerdict {
  /** Consecutive steps (including this one) with both signals below their floors. */
  streak: number;
  /** A message naming the signals, their values and floors when the guard fires, else null. */
  fired: string | null;
}

/**
 * Checks one step's metrics. A step whose update was skipped (no entropy measured) counts as low
 * entropy when its in-group std is below the floor: nothing was left to learn from.
 * @param metrics the step's metrics: rollout/in_group_std (docs/numerics.md §7) and actor/entropy (nats)
 * @param streak the streak before this step
 */
export function checkCollapse(guard: RunConfig['collapse_guard'], metrics: Record<string, number>, streak: number): CollapseVerdict {
  const std = metrics['rollout/in_group_std'];
  const entropy = metrics['actor/entropy'];
  const low = std !== undefined && std < guard.min_in_group_std && (entropy === undefined || entropy < guard.min_entropy);
  const next = low ? streak + 1 : 0;
  if (!guard.enabled || next < guard.patience) return { streak: next, fired: null };
  const ent = entropy === undefined ? 'not measured (update skipped)' : `${entropy.toFixed(4)} < min_entropy ${guard.min_entropy}`;
  return {
    streak: next,
    fired: `collapse_guard: rollout/in_group_std ${std.toFixed(4)} < min_in_group_std ${guard.min_in_group_std} and actor/entropy ${ent} for ${next} consecutive steps`,
  };
}
