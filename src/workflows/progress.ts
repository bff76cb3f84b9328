/**
 * The progress of a training run as the workflow keeps and shows it: the Progress object the
 * `progress` query returns, the search attributes and memo that `starpo list` and the Temporal UI
 * read, and the UI's current details. Workflow code: deterministic, no I/O.
 */
import { setCurrentDetails, upsertMemo, upsertSearchAttributes } from '@temporalio/workflow';
import type { ComputeInfo, RolloutOutput, StepCompute, UpdateOutput } from '../contract/activities';
import type { RunSpec } from '../contract/run';
import type { ObjectRef } from '../contract/store';
import { type Progress, SEARCH_ATTRIBUTE_KEYS, type StarpoWorkflowInput } from '../contract/workflow';
import type { LoopState } from './continue_as_new';
import { currentDetails } from './format';

/** The progress of a workflow run that starts at `input` with the loop state `carried`. */
export function newProgress(input: StarpoWorkflowInput, carried: LoopState): Progress {
  return {
    runId: input.runId,
    step: input.resumeFrom?.step ?? 0,
    maxSteps: 0,
    phase: 'preparing',
    paused: carried.paused,
    stopRequested: null,
    lastMetrics: {},
    lastValidation: null,
    validationCurve: [...carried.validationCurve],
    latestCheckpoint: input.resumeFrom?.checkpoint ?? null,
    secondsPerStep: null,
    compute: null,
  };
}

/** The UI's current details (step, phase, train/val success, s/step), refreshed whenever one changes. */
export function show(progress: Progress): void {
  setCurrentDetails(currentDetails(progress));
}

/** Enters `phase` and shows it; a note about a queue without workers was the last phase's. */
export function enter(progress: Progress, phase: Progress['phase']): void {
  progress.phase = phase;
  if (progress.workerNote) progress.workerNote = null;
  show(progress);
}

/** Publishes the run once its config is known: search attributes (run id, config, step, last val success) and memo. */
export function announce(progress: Progress, { runId, configName, config }: RunSpec): void {
  progress.maxSteps = config.max_steps;
  const lastVal = progress.validationCurve.at(-1);
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTE_KEYS.runId, value: runId },
    { key: SEARCH_ATTRIBUTE_KEYS.config, value: configName },
    { key: SEARCH_ATTRIBUTE_KEYS.step, value: progress.step },
    ...(lastVal ? [{ key: SEARCH_ATTRIBUTE_KEYS.valSuccess, value: lastVal.success }] : []),
  ]);
  upsertMemo({
    report: `starpo report ${runId}`,
    tags: config.train_env_manager.tags.join(','),
    model: config.pretrain,
    maxSteps: config.max_steps,
    paused: progress.paused,
  });
}

/** Records a validation's val/ metrics; its val/env/success joins the curve (replacing one of the same step) and the search attributes. */
export function recordValidation(progress: Progress, step: number, metrics: Record<string, number>): void {
  progress.lastValidation = { step, metrics };
  const success = metrics['val/env/success'];
  if (success !== undefined) {
    // a resumed run evaluates again at the step an earlier execution stopped after
    progress.validationCurve = [...progress.validationCurve.filter((v) => v.step !== step), { step, success }];
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTE_KEYS.valSuccess, value: success }]);
  }
}

/** Records pipeline step `step` as done: its metrics, the new checkpoint, its seconds and compute. */
export function recordStep(
  progress: Progress,
  step: number,
  done: { metrics: Record<string, number>; checkpoint: ObjectRef; seconds: number; compute: StepCompute },
): void {
  Object.assign(progress, {
    step: step + 1,
    lastMetrics: done.metrics,
    latestCheckpoint: done.checkpoint,
    secondsPerStep: done.seconds,
    compute: done.compute,
  });
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTE_KEYS.step, value: step + 1 }]);
  show(progress);
}

/** The distinct backends of a step's rollout shards (in shard order) and its update's. */
export function stepCompute(rollouts: RolloutOutput[], updated: UpdateOutput): StepCompute {
  const rollout: ComputeInfo[] = [];
  for (const { compute } of rollouts) {
    if (compute && !rollout.some((c) => c.backend === compute.backend && c.device === compute.device)) rollout.push(compute);
  }
  return { rollout, update: updated.compute ?? null };
}
