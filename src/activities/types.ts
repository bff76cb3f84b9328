/**
 * The contract between the workflow and its activities: only object references and scalar metrics
 * cross Temporal, never tensors, trajectories or credentials (DESIGN.md, The shape).
 */
import type { RunConfig } from '../config/schema';
import type { RolloutGroup } from '../rollout/plan';
import type { MetricSums } from '../rollout/metrics';

/** A stored object: content address and size (bytes); readers verify sha256 (DESIGN.md). */
export interface ObjectRef {
  bucket: string;
  key: string;
  /** Hex sha256 of the content. */
  sha256: string;
  /** Content length in bytes. */
  bytes: number;
}

/** Input of the workflow `starpoTraining` (also what `starpo run-json` writes as run.json). */
export interface StarpoRunInput {
  /** Run id, also the workflow id; [A-Za-z0-9._-]. */
  runId: string;
  /** A short name for the config (file name without .yaml). */
  configName: string;
  /** The validated config, defaults applied (plain JSON). */
  config: RunConfig;
  /** Continue from this checkpoint manifest instead of preparing the run (resume / continueAsNew). */
  resumeFrom?: { checkpoint: ObjectRef; step: number };
}

/** Input of prepareRun: stores run.json and makes the step-0 policy (warm-up). */
export interface PrepareRunInput {
  runId: string;
  configName: string;
  config: RunConfig;
}

/** Output of prepareRun. */
export interface PrepareRunOutput {
  /** Manifest of the step-0 checkpoint. */
  checkpoint: ObjectRef;
  /** Scalar facts about the warm-up (warmup/reused 0|1, warmup/final_loss, warmup/seconds). */
  metrics: Record<string, number>;
}

/** Input of one rollout activity: a shard of env groups played with one policy. */
export interface RolloutInput {
  runId: string;
  step: number;
  split: 'train' | 'val';
  shard: number;
  /** Manifest of the checkpoint whose weights sample the episodes. */
  policy: ObjectRef;
  groups: RolloutGroup[];
}

/** Output of a rollout activity. */
export interface RolloutOutput {
  /** runs/<run>/rollouts/step-N/<split>-shard-K.jsonl.gz */
  trajectories: ObjectRef;
  /** Per-trajectory metric sums of the shard (merge with mergeSums). */
  metrics: MetricSums;
  /** Seconds spent in the activity. */
  seconds: number;
}

/** Input of the update activity: one StarPO/PPO update on a step's trajectories. */
export interface UpdateInput {
  runId: string;
  step: number;
  /** Manifest of the checkpoint being updated (the policy that sampled the trajectories). */
  policy: ObjectRef;
  trajectories: ObjectRef[];
}

/** Output of the update activity. */
export interface UpdateOutput {
  /** Manifest of the new checkpoint (step + 1). */
  checkpoint: ObjectRef;
  /** actor/*, critic/*, rollout/* (StarPO-S filter), time/update/* (seconds). */
  metrics: Record<string, number>;
  /** Why the update made no optimizer step (the StarPO-S filter kept no group), or null. */
  skipReason: string | null;
}

/** Input of writeMetrics: every scalar of one pipeline step, stored at runs/<run>/metrics/step-N.json. */
export interface WriteMetricsInput {
  runId: string;
  step: number;
  metrics: Record<string, number>;
}

/**
 * Failure type of the non-retryable ApplicationFailure an activity throws when an input it reads from
 * the store (its policy checkpoint, a trajectory shard) is corrupt or missing. The workflow replays the
 * run from `details[0]` (a CheckpointFallback); steps are deterministic, so the replay rewrites the
 * damaged objects with identical bytes and ends with the same weights.
 */
export const CHECKPOINT_CORRUPT_ERROR = 'CheckpointCorruptError';

/** details[0] of a CheckpointCorruptError: where to replay the run from, and what was wrong. */
export interface CheckpointFallback {
  /** Pipeline step of the newest complete, verified checkpoint to continue from. */
  step: number;
  /** Its manifest. */
  checkpoint: ObjectRef;
  /** Key of the unusable object. */
  object: string;
  /** Why it is unusable (e.g. `object ... is corrupt (sha256 mismatch): ...`). */
  reason: string;
}
