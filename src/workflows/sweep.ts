/**
 * Workflow `starpoSweep` (task queue "starpo"): one starpoTraining child per (grid point, seed), at most
 * `parallel` at a time, on the same task queues and workers as any run. The children are ordinary runs
 * (own ids, checkpoints, `starpo status`), so a killed worker or server costs a child what it costs a run:
 * nothing. `pause` / `unpause` / `stop` reach the running children as signals and hold back the waiting
 * ones. Deterministic, no I/O.
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  type ChildWorkflowHandle,
  condition,
  isCancellation,
  setCurrentDetails,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { CONFIG_ERROR } from '../contract/errors';
import type { RunSpec, SweepChild } from '../contract/run';
import {
  pauseSignal,
  type SweepChildOutcome,
  type SweepControlReply,
  type SweepInput,
  type SweepProgress,
  type SweepResult,
  stopSignal,
  sweepPauseUpdate,
  sweepProgressQuery,
  sweepStopUpdate,
  sweepUnpauseUpdate,
  unpauseSignal,
} from '../contract/sweep';
import { SEARCH_ATTRIBUTE_KEYS, type StarpoRunResult, TASK_QUEUES, WORKFLOW_TYPE } from '../contract/workflow';
import { checkStopReason, stopText } from './control';
import { activityProxies } from './proxies';
import { runDetails, runSummary } from './run_text';

/** starpoTraining as the sweep starts it: a new or restarted run. */
type TrainingWorkflow = (input: RunSpec) => Promise<StarpoRunResult>;

/** The sweep loop; see the file comment. */
export async function starpoSweep(input: SweepInput): Promise<SweepResult> {
  if (workflowInfo().workflowId !== input.sweepId) {
    throw ApplicationFailure.nonRetryable(
      `sweepId ${JSON.stringify(input.sweepId)} must equal the workflow id ${JSON.stringify(workflowInfo().workflowId)}`,
      CONFIG_ERROR,
    );
  }
  const sweep = new SweepState(input);
  await activityProxies().update.recordSweep.executeWithOptions({ summary: `sweeps/${input.sweepId}/sweep.json` }, [input]);
  const waiting = input.children.filter((c) => !sweep.ended(c.run.runId));
  const lane = async (): Promise<void> => {
    for (;;) {
      await condition(() => !sweep.progress.paused || sweep.progress.stopRequested !== null);
      const child = sweep.progress.stopRequested === null ? waiting.shift() : undefined;
      if (!child) return;
      await sweep.run(child);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, input.parallel) }, lane));
  sweep.closing = true;
  await condition(allHandlersFinished); // a pause or stop still signalling its children answers before the sweep ends
  return {
    sweepId: input.sweepId,
    children: input.children.flatMap((c) => sweep.outcomes.get(c.run.runId) ?? []),
    stoppedBy: sweep.progress.stopRequested,
  };
}

/** The sweep's children (waiting, running, ended), its pause/stop state and its handlers. */
class SweepState {
  readonly progress: SweepProgress;
  readonly outcomes = new Map<string, SweepChildOutcome>();
  private readonly running = new Map<string, ChildWorkflowHandle<TrainingWorkflow>>();
  /** Set once the last child ended: requests are rejected. */
  closing = false;
  /** The reason a stopped sweep gives its children (the first stop's, else "sweep <id> stopped"). */
  private childStopReason: string | null = null;

  constructor(private readonly input: SweepInput) {
    for (const o of input.finished ?? []) this.outcomes.set(o.runId, o);
    this.progress = {
      sweepId: input.sweepId,
      parallel: input.parallel,
      paused: false,
      stopRequested: null,
      children: input.children.map((c) => {
        const o = this.outcomes.get(c.run.runId);
        return {
          runId: c.run.runId,
          point: c.point,
          seed: c.seed,
          state: o?.state ?? 'waiting',
          ...(o?.failure ? { failure: o.failure } : {}),
        };
      }),
    };
    setHandler(sweepProgressQuery, () => this.progress);
    const open = () => {
      if (this.closing) throw new Error(`sweep ${input.sweepId} is finishing; nothing to change`);
    };
    setHandler(sweepPauseUpdate, () => this.control(pauseSignal, () => (this.progress.paused = true)), { validator: open });
    setHandler(sweepUnpauseUpdate, () => this.control(unpauseSignal, () => (this.progress.paused = false)), { validator: open });
    setHandler(
      sweepStopUpdate,
      (reason?: string) => {
        this.childStopReason ??= reason || `sweep ${input.sweepId} stopped`;
        return this.control(stopSignal, () => (this.progress.stopRequested ??= stopText(reason)), this.childStopReason);
      },
      {
        validator: (reason?: string) => {
          open();
          checkStopReason(reason);
        },
      },
    );
    this.showDetails();
  }

  /** Whether the child had ended before this workflow run started (a resumed sweep). */
  ended(runId: string): boolean {
    return this.outcomes.has(runId);
  }

  /** Starts one child, waits for it to close and records how it ended; a failed child does not fail the sweep. */
  async run(child: SweepChild): Promise<void> {
    const id = child.run.runId;
    this.setState(id, 'running');
    let outcome: SweepChildOutcome;
    try {
      const handle = await startChild<TrainingWorkflow>(WORKFLOW_TYPE, {
        workflowId: id,
        taskQueue: TASK_QUEUES.control,
        args: [child.run],
        typedSearchAttributes: [
          { key: SEARCH_ATTRIBUTE_KEYS.runId, value: id },
          { key: SEARCH_ATTRIBUTE_KEYS.config, value: child.run.configName },
        ],
        staticSummary: runSummary(child.run),
        staticDetails: runDetails(child.run),
      });
      this.running.set(id, handle);
      // A pause or stop requested while the child was starting did not reach it.
      if (this.childStopReason !== null) await handle.signal(stopSignal, this.childStopReason).catch(() => undefined);
      else if (this.progress.paused) await handle.signal(pauseSignal).catch(() => undefined);
      outcome = { runId: id, state: 'completed', result: await handle.result() };
    } catch (err) {
      if (isCancellation(err)) throw err; // the sweep itself is cancelled: not a failed child
      const cause = (err as { cause?: Error }).cause;
      outcome = { runId: id, state: 'failed', failure: cause?.message ?? (err as Error).message };
    } finally {
      this.running.delete(id);
    }
    this.outcomes.set(id, outcome);
    this.setState(id, outcome.state, outcome.failure);
  }

  /** Applies a request to the sweep, then signals it to every running child (one that just closed is skipped). */
  private async control(
    signal: typeof pauseSignal | typeof unpauseSignal | typeof stopSignal,
    apply: () => void,
    reason = '',
  ): Promise<SweepControlReply> {
    apply();
    this.showDetails();
    const running = [...this.running.keys()];
    await Promise.all(
      [...this.running.values()].map((h) =>
        (signal === stopSignal ? h.signal(stopSignal, reason) : h.signal(signal as typeof pauseSignal)).catch(() => undefined),
      ),
    );
    return { running, waiting: this.progress.children.filter((c) => c.state === 'waiting').length };
  }

  private setState(runId: string, state: SweepProgress['children'][number]['state'], failure?: string): void {
    const entry = this.progress.children.find((c) => c.runId === runId)!;
    entry.state = state;
    if (failure) entry.failure = failure;
    this.showDetails();
  }

  /** The sweep's current details in the Temporal UI: children by state, and pause/stop. */
  private showDetails(): void {
    const count = (s: string) => this.progress.children.filter((c) => c.state === s).length;
    const flags = [this.progress.paused ? 'paused' : '', this.progress.stopRequested ? `stopping (${this.progress.stopRequested})` : '']
      .filter(Boolean)
      .join(', ');
    setCurrentDetails(
      `**Sweep \`${this.input.sweepId}\`**: ${count('completed')} completed, ${count('running')} running, ${count('waiting')} waiting, ${count('failed')} failed of ${this.progress.children.length} (parallel ${this.input.parallel})${flags ? `; ${flags}` : ''}`,
    );
  }
}
