/**
 * The contract between the workflow and its activities: only object references and scalar metrics
 * cross Temporal, never tensors, trajectories or credentials (DESIGN.md, The shape).
 */
import type { RunConfig } from '../config/schema';
import type { RolloutGroup } from '../rollout/plan';
import type { MetricSums } from '../rollout/metrics';
import type { StoredRun } from './runtime';

/** A stored object: content address and size (bytes); readers verify sha256 (DESIGN.md). */
export interface ObjectRef {
  bucket: string;
  key: string;
  /** Hex sha256 of the content. */
  sha256: string;
  /** Content length in bytes. */
  bytes: number;
}

/** The tfjs backend and device that computed an activity's tensors, e.g. { backend: 'tensorflow', device: 'CPU' }. */
export interface ComputeInfo {
  /** A backend name of model/backend_choice.ts (wasm, cpu, tensorflow, tensorflow-gpu). */
  backend: string;
  /** 'CPU', or the GPU TensorFlow computes on. */
  device: string;
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
  /**
   * Asynchronous rollouts (async_generation_ratio > 0): the pipeline step of `policy`, at most `step`;
   * the trajectories record `step - policyStep` as their staleness. Unset: `policy` is the step's own.
   */
  policyStep?: number;
  groups: RolloutGroup[];
  /**
   * Set by `starpo eval` (workflow starpoEvaluation): the evaluation's name. The config is then read
   * from runs/<run>/evals/<name>/eval.json and the shard stored under that folder, apart from training.
   */
  eval?: string;
}

/** Output of a rollout activity. */
export interface RolloutOutput {
  /** runs/<run>/rollouts/step-N/<split>-shard-K.jsonl.gz */
  trajectories: ObjectRef;
  /** Per-trajectory metric sums of the shard (merge with mergeSums). */
  metrics: MetricSums;
  /** Seconds spent in the activity. */
  seconds: number;
  /** Where the shard was played (absent for shards committed before starpo recorded it). */
  compute?: ComputeInfo;
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
  /** Where the update was computed (absent for checkpoints written before starpo recorded it). */
  compute?: ComputeInfo;
}

/** Input of writeMetrics: every scalar of one pipeline step, stored at runs/<run>/metrics/step-N.json. */
export interface WriteMetricsInput {
  runId: string;
  step: number;
  metrics: Record<string, number>;
  /** Where the step's activities computed (absent for the final validation's entry). */
  compute?: StepCompute;
}

/** Where a step's activities computed: the distinct backends of its rollout shards, and the update's. */
export interface StepCompute {
  rollout: ComputeInfo[];
  update: ComputeInfo | null;
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

/**
 * What `starpo eval` asks for (the input of workflow starpoEvaluation and of its prepareEval
 * activity): play validation with one checkpoint of a run, through the rollout activities.
 */
export interface EvalRequest {
  /** The trained run. */
  runId: string;
  /** Folder name of the evaluation: runs/<run>/evals/<name>/ ([A-Za-z0-9._-], up to 128 characters). */
  name: string;
  /** Manifest of the checkpoint to evaluate. */
  checkpoint: ObjectRef;
  /** The pipeline step it holds: validation seeds are those of this step (or fixed, see plan.ts). */
  step: number;
  /** Validation settings from another config (`--config`); default the run's own (run.json). */
  config?: { configName: string; config: RunConfig };
  /** Validation episodes (replaces val_batch_size; a multiple of val_env_manager.group_size). */
  episodes?: number;
}

/**
 * runs/<run>/evals/<name>/eval.json, written by prepareEval: the run id, the config the evaluation
 * plays (val_batch_size = its episodes) and its name, checkpoint and step.
 */
export interface EvalSpec extends StoredRun {
  name: string;
  checkpoint: ObjectRef;
  step: number;
}

/** Validation results of one env tag (val/env/{tag}/success, val/{tag}/score) and its episode count. */
export interface TagResult {
  episodes: number;
  success: number;
  /** Mean over the tag's groups of the group's mean episode score (ROLL's val {tag}/score). */
  score: number;
}

/** The result of an evaluation (workflow starpoEvaluation), also stored as runs/<run>/evals/<name>/result.json. */
export interface EvalResult {
  runId: string;
  name: string;
  /** Name of the config whose validation settings were played. */
  configName: string;
  checkpoint: ObjectRef;
  step: number;
  /** Episodes played (kept after the env pool dropped failed groups, if any). */
  episodes: number;
  /** Per val tag, in the config's order. */
  tags: Record<string, TagResult>;
  /** Every val/ metric, as the training workflow's validation reports them. */
  metrics: Record<string, number>;
}
