/**
 * The activities of starpo, by their Temporal activity type names, with their inputs and outputs. Only
 * object references and scalar metrics cross Temporal, never tensors, trajectories or credentials
 * (docs/design.md, "The shape"). The workflows proxy StarpoActivities; src/activities implements it.
 */

import type { RunSpec, SweepSpec } from './run';
import type { RunConfig } from './run_config';
import type { ObjectRef } from './store';
import type { MetricSums, RolloutGroup } from './trajectory';

/** The tfjs backend and device that computed an activity's tensors, e.g. { backend: 'tensorflow', device: 'CPU' }. */
export interface ComputeInfo {
  /** A backend name of model/backend_choice.ts (wasm, cpu, tensorflow, tensorflow-gpu). */
  backend: string;
  /** 'CPU', or the GPU TensorFlow computes on. */
  device: string;
}

/** Where a step's activities computed: the distinct backends of its rollout shards, and the update's. */
export interface StepCompute {
  rollout: ComputeInfo[];
  update: ComputeInfo | null;
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
  /** The first env failure of the shard, when an episode failed (the workflow names it when a whole step failed). */
  firstEnvError?: string;
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
export interface EvalSpec extends RunSpec {
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

/**
 * Every activity, keyed by its Temporal activity type name (public: recorded histories name them).
 * prepareRun, update, writeMetrics, loadRun and recordSweep run on "starpo-update"; rollout, prepareEval and
 * writeEvalResult on "starpo-rollout".
 */
export interface StarpoActivities {
  /** Stores run.json and makes the step-0 policy (warm-up). */
  prepareRun(input: RunSpec): Promise<PrepareRunOutput>;
  /** Plays one shard of env groups and commits its trajectories. */
  rollout(input: RolloutInput): Promise<RolloutOutput>;
  /** One StarPO/PPO update; writes the next checkpoint. */
  update(input: UpdateInput): Promise<UpdateOutput>;
  /** Stores a step's scalars at runs/<run>/metrics/step-N.json. */
  writeMetrics(input: WriteMetricsInput): Promise<void>;
  /** The run record stored at runs/<run>/run.json (a continued workflow run carries only the run id). */
  loadRun(runId: string): Promise<RunSpec>;
  /** Fixes what an evaluation plays in runs/<run>/evals/<name>/eval.json. */
  prepareEval(request: EvalRequest): Promise<EvalSpec>;
  /** Stores an evaluation's result.json (last). */
  writeEvalResult(result: EvalResult): Promise<void>;
  /** Stores a sweep's definition at sweeps/<sweep>/sweep.json (the report and `starpo resume` read it). */
  recordSweep(spec: SweepSpec): Promise<void>;
}

/**
 * The activities of the control worker (they run where the workflow runs, so they need no other worker).
 * idleQueues (a local activity): which task queues a workflow waits on have no worker polling them, as
 * notes naming the queue and how to start a worker for it (empty when every queue it waits on has one).
 * track (on task queue "starpo"): writes the run's stored steps that its trackers (track_with) lack.
 */
export interface ControlActivities {
  idleQueues(workflowId: string): Promise<string[]>;
  track(runId: string): Promise<TrackOutput>;
}

/** What the track activity wrote: per tracker, the steps written now and the highest step it holds. */
export interface TrackOutput {
  trackers: Array<{ tracker: string; written: number[]; lastStep: number }>;
}

/** One step's scalars as writeMetrics stores them: runs/<run>/metrics/step-N.json. */
export interface StepMetrics {
  step: number;
  metrics: Record<string, number>;
  /** Where the step's rollouts and update computed (absent in runs made before starpo recorded it). */
  compute?: StepCompute;
}

/** What a checkpoint's trainer_state.json holds (written by prepareRun and update). */
export interface TrainerState {
  /** Pipeline steps (updates) completed when this checkpoint was written. */
  step: number;
  /** AdamW settings the optimizer state belongs to. */
  betas: [number, number];
  weightDecay: number;
  /** AdamW settings of the critic's optimizer (gae runs). */
  criticOptimizer?: { betas: [number, number]; weightDecay: number };
  /** Scalar facts about how the checkpoint was made (metrics of its update or warm-up). */
  metrics: Record<string, number>;
  /** Beta of the token-level KL after this step (adaptive controller state; docs/numerics.md §6). */
  klCoef?: number;
  /** Manifest of the run's step-0 policy: the frozen reference of the KL terms. Absent in the step-0 checkpoint itself. */
  reference?: ObjectRef;
  /**
   * Manifest of the checkpoint whose full weights this checkpoint's LoRA adapters apply to (a LoRA run's
   * checkpoints hold only the adapters); absent in a checkpoint of full weights.
   */
  base?: ObjectRef;
  /** Why this step's update made no optimizer step (StarPO-S filter kept nothing), when it did not. */
  skipReason?: string;
  /** Where the update that wrote this checkpoint computed. */
  compute?: ComputeInfo;
}
