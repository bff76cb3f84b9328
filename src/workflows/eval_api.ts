/**
 * Names shared by the evaluation workflow (`starpo eval`) and its client: the workflow type, its
 * workflow id and the `evalProgress` query. No I/O; safe in workflow code.
 */
import { defineQuery } from '@temporalio/workflow';

/** The workflow type of an evaluation (task queue "starpo", like starpoTraining). */
export const EVAL_WORKFLOW_TYPE = 'starpoEvaluation';

/** Workflow id of an evaluation: `<runId>-eval-<name>` (one per run and evaluation name). */
export function evalWorkflowId(runId: string, name: string): string {
  return `${runId}-eval-${name}`;
}

/** What the `evalProgress` query returns. */
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
