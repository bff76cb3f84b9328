/**
 * What an activity does when an input it reads from the store is corrupt or missing:
 * it logs which object and why, finds where the run can continue from (the newest older complete
 * checkpoint for a damaged policy; the step's own policy for a damaged trajectory shard, whose
 * rollouts are then played again) and throws a non-retryable CheckpointCorruptError carrying that
 * CheckpointFallback, so the workflow replays from there instead of failing the run.
 */
import { log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { isUnusable, type CorruptObjectError, type ObjectNotFoundError } from '../storage/errors';
import { readCompleteBefore } from '../storage/manifest';
import type { Trajectory } from '../contract';
import { CHECKPOINT_CORRUPT_ERROR, type CheckpointFallback, type ObjectRef, type UpdateInput } from '../contract';
import type { PolicyCheckpoint } from './checkpoint';
import type { ActivityRuntime } from './runtime';

/**
 * The policy checkpoint of pipeline step `step` (from the worker's cache or the store, verified).
 * @throws ApplicationFailure CheckpointCorruptError (non-retryable) naming the newest older complete
 *   checkpoint when this one is corrupt or missing; the CorruptObjectError itself when there is none.
 */
export async function takePolicy(rt: ActivityRuntime, runId: string, step: number, policy: ObjectRef): Promise<PolicyCheckpoint> {
  try {
    return await rt.take(policy);
  } catch (err) {
    if (!isUnusable(err)) throw err;
    const fallback = await readCompleteBefore(rt.store, runId, step, (line) => log.warn(line));
    if (!fallback) throw err;
    throw replayFrom(err, fallback.step, fallback.ref);
  }
}

/**
 * The trajectories of an update's shards, verified.
 * @throws ApplicationFailure CheckpointCorruptError pointing at the update's own step and policy (replay
 *   the step: its rollouts are played again) when a shard is corrupt or missing.
 */
export async function readTrajectories(rt: ActivityRuntime, input: UpdateInput): Promise<Trajectory[]> {
  const trajectories: Trajectory[] = [];
  for (const ref of input.trajectories) {
    try {
      trajectories.push(...(await rt.store.getJsonlGz<Trajectory>(ref)));
    } catch (err) {
      if (!isUnusable(err)) throw err;
      throw replayFrom(err, input.step, input.policy);
    }
  }
  return trajectories;
}

/** Logs and builds the CheckpointCorruptError of an unusable object. */
function replayFrom(err: CorruptObjectError | ObjectNotFoundError, step: number, checkpoint: ObjectRef): ApplicationFailure {
  const details: CheckpointFallback = { step, checkpoint, object: err.key, reason: err.message };
  const message = `${err.message}; the run continues from step ${step} (${checkpoint.key})`;
  log.warn(message);
  return ApplicationFailure.create({ type: CHECKPOINT_CORRUPT_ERROR, message, nonRetryable: true, details: [details] });
}
