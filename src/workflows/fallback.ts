/**
 * Failure and replay, both sides: when an input an activity reads from the store (its policy checkpoint, a
 * trajectory shard) is corrupt or missing, the activity names where the run can continue from and fails
 * with a non-retryable CheckpointCorruptError; the workflow reads it (fallbackOf) and replays the run from
 * there. Imports nothing with I/O, so the workflow bundle may carry it; docs/durability.md tells the story.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { CHECKPOINT_CORRUPT_ERROR, type CheckpointFallback } from '../contract/errors';
import type { ObjectRef } from '../contract/store';
import type { Trajectory } from '../contract/trajectory';
import { type CorruptObjectError, isUnusable, type ObjectNotFoundError } from '../storage/errors';

/** How often the same object may send the run back before the run fails instead of looping. */
export const MAX_REPLAYS_PER_OBJECT = 3;

/** Workflow side: the CheckpointFallback carried by a failed activity, or null when `err` is anything else. */
export function fallbackOf(err: unknown): CheckpointFallback | null {
  if (!(err instanceof ActivityFailure)) return null;
  const cause = err.cause;
  if (!(cause instanceof ApplicationFailure) || cause.type !== CHECKPOINT_CORRUPT_ERROR) return null;
  return (cause.details?.[0] as CheckpointFallback | undefined) ?? null;
}

/** What the activity side reads through (a worker's runtime, activities/runtime.ts). */
export interface ReplaySource<P> {
  /** The checkpoint behind a manifest (with its optimizer state when an update trains on it). */
  take(manifest: ObjectRef, withOptimizer: boolean): Promise<P>;
  /** The newest checkpoint before `step` that an update can continue from (weights and optimizer verified), or null. */
  trainableBefore(runId: string, step: number): Promise<{ step: number; ref: ObjectRef } | null>;
  /** The trajectories of a shard, verified. */
  trajectories(shard: ObjectRef): Promise<Trajectory[]>;
  warn(line: string): void;
}

/**
 * Activity side: the policy checkpoint of pipeline step `step`.
 * @throws ApplicationFailure CheckpointCorruptError (non-retryable) naming the newest older checkpoint an
 *   update can continue from when this one (or, for an update, its optimizer state) is corrupt or missing;
 *   the CorruptObjectError itself when there is none.
 */
export async function takePolicy<P>(
  source: ReplaySource<P>,
  runId: string,
  step: number,
  policy: ObjectRef,
  withOptimizer = false,
): Promise<P> {
  try {
    return await source.take(policy, withOptimizer);
  } catch (err) {
    if (!isUnusable(err)) throw err;
    const fallback = await source.trainableBefore(runId, step);
    if (!fallback) throw err;
    throw replayFrom(source, err, fallback.step, fallback.ref);
  }
}

/**
 * Activity side: the trajectories of an update's shards, verified.
 * @throws ApplicationFailure CheckpointCorruptError pointing at the update's own step and policy (the step is
 *   played again) when a shard is corrupt or missing.
 */
export async function readTrajectories<P>(
  source: ReplaySource<P>,
  input: { step: number; policy: ObjectRef; trajectories: ObjectRef[] },
): Promise<Trajectory[]> {
  const trajectories: Trajectory[] = [];
  for (const ref of input.trajectories) {
    try {
      trajectories.push(...(await source.trajectories(ref)));
    } catch (err) {
      if (!isUnusable(err)) throw err;
      throw replayFrom(source, err, input.step, input.policy);
    }
  }
  return trajectories;
}

/** Logs and builds the CheckpointCorruptError of an unusable object. */
function replayFrom<P>(
  source: ReplaySource<P>,
  err: CorruptObjectError | ObjectNotFoundError,
  step: number,
  checkpoint: ObjectRef,
): ApplicationFailure {
  const details: CheckpointFallback = { step, checkpoint, object: err.key, reason: err.message };
  const message = `${err.message}; the run continues from step ${step} (${checkpoint.key})`;
  source.warn(message);
  return ApplicationFailure.create({ type: CHECKPOINT_CORRUPT_ERROR, message, nonRetryable: true, details: [details] });
}
