/**
 * Reading the CheckpointCorruptError of an activity (src/activities/fallback.ts): an
 * input in the store was corrupt or missing, and the activity names the newest complete checkpoint
 * the run can replay from. Deterministic; workflow code.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { CHECKPOINT_CORRUPT_ERROR, type CheckpointFallback } from '../contract/errors';

/** How often the same object may send the run back before the run fails instead of looping. */
export const MAX_REPLAYS_PER_OBJECT = 3;

/** The CheckpointFallback carried by a failed activity, or null when `err` is anything else. */
export function fallbackOf(err: unknown): CheckpointFallback | null {
  if (!(err instanceof ActivityFailure)) return null;
  const cause = err.cause;
  if (!(cause instanceof ApplicationFailure) || cause.type !== CHECKPOINT_CORRUPT_ERROR) return null;
  return (cause.details?.[0] as CheckpointFallback | undefined) ?? null;
}
