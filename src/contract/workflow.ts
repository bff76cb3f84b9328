/**
 * Names and shapes shared by the workflows, the workers, the client and infra: task queues, the
 * workflow types, their inputs and results, the `progress` / `config` / `evalProgress` queries, the
 * `pause` / `unpause` / `stop` updates and the run's search attributes. No I/O; safe in workflow code.
 */
import { defineSearchAttributeKey } from '@temporalio/common';
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { StepCompute } from './activities';
import type { RunSpec, ValidationPoint } from './run';
import type { RunConfig } from './run_config';
import type { ObjectRef } from './store';

/** Task queues (docs/design.md, "Processes and task queues"): workflows, rollout activities, update activities. */
export const TASK_QUEUES = { control: 'starpo', rollout: 'starpo-rollout', update: 'starpo-update' } as const;

/** Worker roles: control polls TASK_QUEUES.control, rollout and update their queues, all the three (one process). */
export const ROLES = ['control', 'rollout', 'update', 'all'] as const;
export type Role = (typeof ROLES)[number];

/** The training workflow type name. */
export const WORKFLOW_TYPE = 'starpoTraining';

/** The workflow type of an evaluation (`starpo eval`; task queue "starpo", like starpoTraining). */
export const EVAL_WORKFLOW_TYPE = 'starpoEvaluation';

/** Workflow id of an evaluation: `<runId>-eval-<name>` (one per run and evaluation name). */
export function evalWorkflowId(runId: string, name: string): string {
  return `${runId}-eval-${name}`;
}

/**
 * The run's custom search attributes: registered when the dev server starts (infra), upserted by
 * starpoTraining, set at start and read back by the CLI.
 */
export const SEARCH_ATTRIBUTE_KEYS = {
  runId: defineSearchAttributeKey('StarpoRunId', 'KEYWORD'),
  config: defineSearchAttributeKey('StarpoConfig', 'KEYWORD'),
  step: defineSearchAttributeKey('StarpoStep', 'INT'),
  valSuccess: defineSearchAttributeKey('StarpoValSuccess', 'DOUBLE'),
};

/** A checkpoint the workflow knows, by the pipeline step whose policy it holds. */
export interface KnownPolicy {
  step: number;
  checkpoint: ObjectRef;
}

/**
 * What one workflow run hands the next at continueAsNew: the run id, the newest checkpoint and the
 * little state the loop keeps. The config is not carried: the next run reads it back from
 * runs/<run>/run.json (activity `loadRun`).
 */
export interface StarpoContinuation {
  runId: string;
  resumeFrom: { checkpoint: ObjectRef; step: number };
  /** collapse_guard's streak of low-signal steps. */
  collapseStreak: number;
  /** What the early stops have counted so far (absent in continuations made before they existed: fresh). */
  earlyStop?: EarlyStopState;
  /** A pause requested before continueAsNew holds in the next run. */
  paused: boolean;
  /** The validation curve so far, so the result of the last run covers the whole chain. */
  validationCurve: ValidationPoint[];
  /**
   * async_generation_ratio > 0 only: the checkpoints the next steps' rollouts play with (the newest and
   * up to r older ones), so the continued run reuses the shards played ahead.
   */
  policies?: KnownPolicy[];
}

/** The counts of the early stops (rollout_filter_empty_stop_steps, early_stop) a run carries across continue-as-new. */
export interface EarlyStopState {
  /** Consecutive steps whose variance filter kept no group. */
  emptyFilter: number;
  /** rollout/in_group_std of the first early_stop.reward_variance_collapse.baseline_steps steps. */
  varianceBaseline: number[];
  /** rollout/in_group_std of the latest steps after the baseline (at most its window). */
  varianceWindow: number[];
  /** Per validation tag: consecutive evaluations with success below early_stop.low_validation_success.threshold. */
  lowSuccess: Record<string, number>;
}

/** Input of workflow starpoTraining: a new (or restarted) run with its config, or a continued run. */
export type StarpoWorkflowInput = RunSpec | StarpoContinuation;

/** What the `progress` query returns. */
export interface Progress {
  runId: string;
  /** Pipeline steps completed (updates applied). */
  step: number;
  /** max_steps of the config (0 until a continued run has read its config). */
  maxSteps: number;
  /** 'paused': waiting between steps for `unpause` (or `stop`). */
  phase: 'preparing' | 'rollout' | 'update' | 'validation' | 'paused' | 'done';
  /** A pause was requested: the run waits once the step in flight is done. */
  paused: boolean;
  /** Why the run stops after the step in flight (`stop`, or collapse_guard with action stop), else null. */
  stopRequested: string | null;
  /** Scalar metrics of the last completed step (train, update and, when run, validation). */
  lastMetrics: Record<string, number>;
  /** Validation metrics of the last evaluation, with the step it ran at. */
  lastValidation: { step: number; metrics: Record<string, number> } | null;
  /** Validation success of every evaluation of the run (continued runs included). */
  validationCurve: ValidationPoint[];
  /** Manifest of the newest checkpoint. */
  latestCheckpoint: ObjectRef | null;
  /** Wall seconds of the last step (workflow time). */
  secondsPerStep: number | null;
  /** Where the last step's rollouts and update computed (null before the first step of this workflow run). */
  compute: StepCompute | null;
  /**
   * The task queues the phase waits on that no worker polls, with how to start one (the control worker
   * checks once a phase has lasted a while; absent in histories recorded before it did), else null.
   */
  workerNote?: string | null;
  /** The last failure of the run's trackers (track_with), cleared once a later try writes; absent or null when none. */
  trackerNote?: string | null;
}

/** Result of a finished training run. */
export interface StarpoRunResult {
  runId: string;
  steps: number;
  finalCheckpoint: ObjectRef;
  lastMetrics: Record<string, number>;
  lastValidation: Progress['lastValidation'];
  validationCurve: Progress['validationCurve'];
  /** Why the run ended before max_steps: "stop: <reason>" / "stop requested" (`stop`) or collapse_guard's message; else null. */
  stoppedBy: string | null;
}

/** Query returning Progress. */
export const progressQuery = defineQuery<Progress>('progress');

/** Query returning the run's config (null while a continued run is still reading run.json). */
export const configQuery = defineQuery<RunConfig | null>('config');

/** The reply of `pause`, `unpause` and `stop`. */
export interface ControlReply {
  /** Steps completed when the request was handled. */
  step: number;
  /** Steps completed when it takes effect: a step in flight finishes (and is checkpointed) first. */
  takesEffectAtStep: number;
  /** The phase when the request was handled. */
  phase: Progress['phase'];
}

/** Update: wait between steps from the next step boundary on. Idempotent; rejected once the run is finishing. */
export const pauseUpdate = defineUpdate<ControlReply>('pause');

/** Update: continue a paused run. Idempotent; rejected once the run is finishing. */
export const unpauseUpdate = defineUpdate<ControlReply>('unpause');

/**
 * Update: finish the step in flight (checkpoint and metrics written), run the final validation when
 * eval_steps > 0, then complete with `stoppedBy` = "stop: <reason>". A paused run stops without
 * another step. Rejected once the run is finishing; a reason is at most 200 characters ('' or a
 * missing argument: "stop requested"). From the temporal CLI:
 * `temporal workflow update execute --workflow-id <run> --name stop --input '"why"'`.
 */
export const stopUpdate = defineUpdate<ControlReply, [reason: string]>('stop');

/** What the `evalProgress` query of an evaluation returns. */
export interface EvalProgress {
  runId: string;
  name: string;
  /** Pipeline step of the checkpoint evaluated. */
  step: number;
  /** 'preparing': writing eval.json; 'validation': rollouts running; 'done': result stored. */
  phase: 'preparing' | 'validation' | 'done';
  /** Rollout shards of the evaluation (0 while preparing) and how many have completed. */
  shards: number;
  shardsDone: number;
  /** Episodes to play (val_batch_size of the evaluation's config; 0 while preparing). */
  episodes: number;
}

/** Query returning EvalProgress. */
export const evalProgressQuery = defineQuery<EvalProgress>('evalProgress');

/** What `starpo status` reports of a run (also its `--json` output and the report's state line). */
export interface RunStatus {
  runId: string;
  /** Temporal's status of the newest execution: RUNNING, COMPLETED, FAILED, TERMINATED, ... */
  status: string;
  /** Search attributes: the config name, steps completed, the last validation success. */
  config: string | null;
  step: number | null;
  valSuccess: number | null;
  /** The `progress` query (running runs whose control worker answered). */
  progress?: Progress;
  /** The result (completed runs). */
  result?: StarpoRunResult;
  /** Why the run closed (failed, terminated, ...). */
  failure?: string;
  /**
   * Running runs whose control worker did not answer: the phase read from the pending activities
   * (e.g. 'rollout'; 'waiting for a control worker' when none is pending) and max_steps from the memo.
   */
  phase?: string;
  maxSteps?: number | null;
  /** Task queues the run waits on that no worker polls, each with how to start one. */
  idleQueues?: string[];
  note?: string;
}
