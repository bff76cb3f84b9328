/**
 * Operating a running workflow: the `progress` and `config` queries, the `pause`, `unpause` and
 * `stop` updates, and the signals of the same names a sweep sends its children. Requests take effect at step boundaries: the step in
 * flight always finishes and writes its checkpoint and metrics. Workflow code: deterministic, no I/O.
 */
import { condition, setCurrentDetails, setHandler, upsertMemo } from '@temporalio/workflow';
import type { RunConfig } from '../contract/run_config';
import { pauseSignal, stopSignal, unpauseSignal } from '../contract/sweep';
import { type ControlReply, configQuery, type Progress, pauseUpdate, progressQuery, stopUpdate, unpauseUpdate } from '../contract/workflow';
import { currentDetails } from './format';

/** Longest reason `stop` accepts (it ends up in the result and the UI). */
const MAX_REASON = 200;

/** The validator of a `stop` update's reason (a run's and a sweep's). @throws Error saying what is allowed */
export function checkStopReason(reason?: string): void {
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_REASON)) {
    throw new Error(`a stop reason is a string of at most ${MAX_REASON} characters`);
  }
}

/** The `stoppedBy` text of a stop request: "stop: <reason>", or "stop requested" without one. */
export function stopText(reason?: string): string {
  return reason ? `stop: ${String(reason).slice(0, MAX_REASON)}` : 'stop requested';
}

/** The pause/stop state of one workflow run and its handlers. */
export class RunControl {
  /** True while a step runs (from the end of the pause wait to the step's checkpoint and metrics). */
  inStep = false;
  /** Set once the step loop is over (final validation, done): pause, unpause and stop are rejected. */
  private closing = false;

  /**
   * Registers the handlers (call before the first await so early requests find them).
   * @param progress the workflow's progress object, read by the query and updated here
   * @param config the run's config once known
   */
  constructor(
    private readonly progress: Progress,
    config: () => RunConfig | null,
  ) {
    setHandler(progressQuery, () => progress);
    setHandler(configQuery, config);
    const open = () => {
      if (this.closing) throw new Error(`run ${progress.runId} is finishing (phase ${progress.phase}); nothing to change`);
    };
    setHandler(pauseUpdate, () => this.setPaused(true), { validator: open });
    setHandler(unpauseUpdate, () => this.setPaused(false), { validator: open });
    setHandler(stopUpdate, (reason?: string) => this.stop(stopText(reason)), {
      validator: (reason?: string) => {
        open();
        checkStopReason(reason);
      },
    });
    // The same requests from a sweep (a parent cannot send updates); late ones are dropped, as the run is ending anyway.
    setHandler(pauseSignal, () => void (this.closing || this.setPaused(true)));
    setHandler(unpauseSignal, () => void (this.closing || this.setPaused(false)));
    setHandler(stopSignal, (reason?: string) => void (this.closing || this.stop(stopText(reason))));
  }

  /** Why the run stops after the step in flight, or null. */
  get stopReason(): string | null {
    return this.progress.stopRequested;
  }

  /** Asks the run to stop after the step in flight (the first reason wins). */
  stop(reason: string): ControlReply {
    this.progress.stopRequested ??= reason;
    return this.reply();
  }

  /** Waits between steps while paused (phase 'paused', until the caller sets the next phase); returns at once when not paused or stopping. */
  async waitWhilePaused(): Promise<void> {
    if (!this.progress.paused || this.stopReason !== null) return;
    this.progress.phase = 'paused';
    setCurrentDetails(currentDetails(this.progress));
    await condition(() => !this.progress.paused || this.stopReason !== null);
  }

  /** From here on requests are rejected (the loop is over). */
  close(): void {
    this.closing = true;
  }

  private setPaused(paused: boolean): ControlReply {
    if (this.progress.paused !== paused) {
      this.progress.paused = paused;
      upsertMemo({ paused });
      setCurrentDetails(currentDetails(this.progress));
    }
    return this.reply();
  }

  private reply(): ControlReply {
    const { step, phase } = this.progress;
    return { step, takesEffectAtStep: step + (this.inStep ? 1 : 0), phase };
  }
}
