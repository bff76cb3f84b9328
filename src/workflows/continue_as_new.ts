/**
 * Continue-as-new of starpoTraining: every STEPS_PER_RUN steps (or when the server suggests it) the run
 * continues as a new workflow run carrying only the run id, the newest checkpoint and the loop's small
 * state (StarpoContinuation), so the history stays small; the config is read back from run.json.
 * Workflow code: deterministic, no I/O.
 */
import { continueAsNew, workflowInfo } from '@temporalio/workflow';
import type { StarpoContinuation, StarpoRunResult, StarpoWorkflowInput } from '../contract/workflow';
import type { TrainRollouts } from './train_rollouts';

/** Steps per workflow run before continueAsNew keeps the history small. */
export const STEPS_PER_RUN = 100;

/** The little state the loop carries from one workflow run to the next. */
export type LoopState = Omit<StarpoContinuation, 'runId' | 'resumeFrom'>;

/**
 * The loop state a workflow run starts with: fresh for a new run, carried for a continued one; a restarted
 * run (`starpo resume`) keeps the validation curve of its earlier executions.
 */
export function loopStateOf(input: StarpoWorkflowInput): LoopState {
  return 'config' in input ? { collapseStreak: 0, paused: false, validationCurve: input.resumeFrom?.validationCurve ?? [] } : input;
}

/** Whether this workflow run should hand over after `stepsDone` steps of its own. */
export function continueDue(stepsDone: number): boolean {
  return stepsDone >= STEPS_PER_RUN || workflowInfo().continueAsNewSuggested;
}

/**
 * Ends this workflow run and continues the run as a new one. With async rollouts the rollouts launched
 * ahead finish first (their committed shards are reused) and their checkpoints carry over.
 * @param state the continuation, read once the rollouts have settled
 */
export async function continueRun(rollouts: TrainRollouts, state: () => StarpoContinuation): Promise<never> {
  await rollouts.settle();
  const next: StarpoContinuation = { ...state(), ...(rollouts.ratio > 0 ? { policies: rollouts.known() } : {}) };
  return continueAsNew<(input: StarpoWorkflowInput) => Promise<StarpoRunResult>>(next);
}
