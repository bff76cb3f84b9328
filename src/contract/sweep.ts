/**
 * Sweeps: workflow `starpoSweep` runs one starpoTraining child per (grid point, seed) on the same task
 * queues and workers, at most `parallel` at a time. Its input is a SweepSpec (`starpo sweep`, or
 * `starpo sweep-json` for `temporal workflow start`), stored as sweeps/<sweepId>/sweep.json; the
 * `sweepProgress` query and the `pause` / `unpause` / `stop` updates act on the whole sweep.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { SweepSpec } from './run';
import type { StarpoRunResult } from './workflow';

/** The sweep workflow type name (task queue "starpo", like starpoTraining). */
export const SWEEP_WORKFLOW_TYPE = 'starpoSweep';

/** How a child ended, as far as the sweep knows. */
export interface SweepChildOutcome {
  runId: string;
  /** 'completed': all its steps, or stopped early (result.stoppedBy); 'failed': failed, terminated or timed out. */
  state: 'completed' | 'failed';
  result?: StarpoRunResult;
  failure?: string;
}

/** Input of starpoSweep: the spec, and on `starpo resume` what already ended (children still to run carry run.resumeFrom). */
export interface SweepInput extends SweepSpec {
  finished?: SweepChildOutcome[];
}

/** What the `sweepProgress` query returns. */
export interface SweepProgress {
  sweepId: string;
  parallel: number;
  paused: boolean;
  /** Why no more children start (`stop`), else null. */
  stopRequested: string | null;
  children: Array<{
    runId: string;
    point: number;
    seed: number;
    state: 'waiting' | 'running' | SweepChildOutcome['state'];
    failure?: string;
  }>;
}

/** Result of a sweep: every child's outcome, in the spec's order (children never started are left out). */
export interface SweepResult {
  sweepId: string;
  children: SweepChildOutcome[];
  stoppedBy: string | null;
}

/** Reply of the sweep's `pause` / `unpause` / `stop`: the children the request reached (running then). */
export interface SweepControlReply {
  running: string[];
  waiting: number;
}

/** Query returning SweepProgress. */
export const sweepProgressQuery = defineQuery<SweepProgress>('sweepProgress');

/** Update of a sweep: no child starts, and the running ones pause at their next step boundary. */
export const sweepPauseUpdate = defineUpdate<SweepControlReply>('pause');
/** Update of a sweep: children continue and start again. */
export const sweepUnpauseUpdate = defineUpdate<SweepControlReply>('unpause');
/** Update of a sweep: no child starts, the running ones stop after their step in flight; the sweep then completes. */
export const sweepStopUpdate = defineUpdate<SweepControlReply, [reason: string]>('stop');

/**
 * Signals the sweep sends its running children (a workflow cannot send another an update); they act as
 * the updates of the same names do, and are ignored once a run is finishing.
 */
export const pauseSignal = defineSignal('pause');
export const unpauseSignal = defineSignal('unpause');
export const stopSignal = defineSignal<[reason: string]>('stop');
