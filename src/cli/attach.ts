/**
 * Follows a running workflow from the terminal: while the run prepares, a warm-up bar fed by the
 * heartbeat details of the pending prepareRun activity (SFT step of total, loss; read from the
 * workflow's describe, so no workflow change is needed); then a step bar fed by the `progress` query
 * (step, train success, mean episode score, seconds per step) until the run closes.
 */

import type { Client, WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { Presets, SingleBar } from 'cli-progress';
import { idleQueues, STARTED } from '../activities/idle_queues';
import { type Progress, progressQuery, type StarpoRunResult } from '../contract';
import { formatNumber, progressLine } from '../workflows/format';

/** Options shared by both bars: on a TTY redrawn in place; when piped (CI, logs) a line every 10 s. */
const BAR_OPTIONS = { hideCursor: false, noTTYOutput: true, notTTYSchedule: 10_000 };

/** The warm-up's SFT progress: steps done (1-based), steps in all, last loss (nats per response token). */
export interface WarmupProgress {
  done: number;
  total: number;
  loss?: number;
}

/**
 * The last heartbeat details of each pending activity of type `activityType` of a workflow (activities
 * that have not heartbeated yet are left out), decoded with the default payload converter.
 * @param description the workflow's describe() answer
 */
export function heartbeatDetails<T>(description: WorkflowExecutionDescription, activityType: string): T[] {
  return (description.raw.pendingActivities ?? [])
    .filter((a) => a.activityType?.name === activityType)
    .flatMap((a) => {
      const payload = a.heartbeatDetails?.payloads?.[0];
      return payload ? [defaultPayloadConverter.fromPayload<T>(payload)] : [];
    });
}

/**
 * The warm-up progress from the heartbeat details of the running prepareRun activity
 * (activities/prepare.ts heartbeats {warmupStep, warmupSteps, loss} after every SFT step); null before
 * its first heartbeat (demonstrations being played, or a stored warm-up being reused).
 */
export async function warmupProgress(handle: WorkflowHandle): Promise<WarmupProgress | null> {
  const [details] = heartbeatDetails<{ warmupStep?: number; warmupSteps?: number; loss?: number }>(await handle.describe(), 'prepareRun');
  if (details?.warmupStep === undefined || details.warmupSteps === undefined) return null;
  return { done: details.warmupStep + 1, total: details.warmupSteps, loss: details.loss };
}

/**
 * One line of a run's progress for logs (`starpo sweep`'s lines for each running run): the warm-up's SFT
 * steps while it prepares, else the phase and the progress line; says so when no control worker answers.
 */
export async function progressText(handle: WorkflowHandle): Promise<string> {
  const p = await handle.query(progressQuery).catch(() => null);
  if (!p) return 'no control worker answered';
  if (p.phase === 'preparing') {
    const w = await warmupProgress(handle);
    return w ? `warm-up ${w.done}/${w.total} SFT steps, loss ${formatNumber(w.loss)}` : 'preparing (warm-up starting or reused)';
  }
  return `${p.phase} · ${progressLine(p)}`;
}

/**
 * What a run is doing before its first bar, for a line of its own: the workers load for seconds, and the
 * model loads (and a warm-up, when the config has one, plays its demonstrations) before the first bar.
 */
function beforeBarText(answered: boolean, description: WorkflowExecutionDescription): string {
  if (!answered) return 'waiting for a control worker to take the workflow (a starting worker bundles the workflow code first)';
  const prepare = (description.raw.pendingActivities ?? []).find((a) => a.activityType?.name === 'prepareRun');
  if (prepare && prepare.state !== STARTED)
    return 'waiting for the update worker to take the warm-up (a starting worker loads its tfjs backend first)';
  return 'preparing: loading the model, then the warm-up if the config has one (its demonstrations played, or a stored warm-up reused; its bar follows)';
}

/** Seconds between looks at the pollers of the queues the run waits on (idle_queues.ts). */
const IDLE_CHECK_SECONDS = 10;

/**
 * Shows progress until the workflow completes, then returns its result. When the run waits on a task
 * queue no worker polls, the bar (or, before a bar is shown, a line) says which and how to start one.
 * @throws WorkflowFailedError when the run fails (the CLI maps it to exit code 1)
 */
export async function attach(client: Client, runId: string, log: (line: string) => void, pollSeconds = 2): Promise<StarpoRunResult> {
  const handle = client.workflow.getHandle(runId);
  const warmupBar = new SingleBar(
    { ...BAR_OPTIONS, format: 'warm-up {value}/{total} SFT steps [{bar}] loss {loss}{idle}' },
    Presets.shades_classic,
  );
  const stepBar = new SingleBar(
    { ...BAR_OPTIONS, format: 'step {value}/{total} [{bar}] {phase} | train success {success} | score {score} | {sps} s/step{idle}' },
    Presets.shades_classic,
  );
  let warmup: 'none' | 'shown' | 'done' = 'none';
  let steps = false;
  let finished = false;
  let idle = '';
  let said = '';
  let idleCheckedAt = Date.now();
  const result = handle.result().finally(() => {
    finished = true;
  });
  // Handled at once: a run that closes while the loop awaits a query is reported by `return result` below.
  result.catch(() => undefined);
  /** Logs `text` unless it was the last thing said; returns it. */
  const sayOnce = (last: string, text: string): string => {
    if (text !== last) log(text);
    return text;
  };
  while (!finished) {
    let answered = false;
    try {
      const p: Progress = await handle.query(progressQuery);
      answered = true;
      if (p.phase === 'preparing') {
        const w = await warmupProgress(handle);
        const d = !w && warmup === 'none' ? await handle.describe().catch(() => null) : null;
        if (d) said = sayOnce(said, beforeBarText(true, d));
        if (w && warmup === 'none') warmupBar.start(w.total, w.done, { loss: formatNumber(w.loss), idle });
        else if (w) warmupBar.update(w.done, { loss: formatNumber(w.loss), idle });
        if (w) warmup = 'shown';
      } else {
        if (warmup === 'shown') {
          warmupBar.update(warmupBar.getTotal());
          warmupBar.stop();
          warmup = 'done';
        }
        const payload = {
          phase: p.phase,
          success: formatNumber(p.lastMetrics['env/success']),
          score: formatNumber(p.lastMetrics['env/score']),
          sps: formatNumber(p.secondsPerStep, 1),
          idle,
        };
        if (!steps) stepBar.start(p.maxSteps, p.step, payload);
        else stepBar.update(p.step, payload);
        steps = true;
      }
    } catch {
      // no control worker has answered the query yet (starting up, or none runs); keep waiting
      const d = warmup === 'none' && !steps ? await handle.describe().catch(() => null) : null;
      if (d) said = sayOnce(said, beforeBarText(false, d));
    }
    if (Date.now() - idleCheckedAt >= IDLE_CHECK_SECONDS * 1000) {
      idleCheckedAt = Date.now();
      const notes = await handle
        .describe()
        .then((d) => idleQueues(client, d, !answered))
        .catch(() => null); // the server did not answer: keep the last note
      const next = notes && notes.length > 0 ? ` | ${notes.join('; ')}` : notes ? '' : idle;
      if (next !== idle) {
        // On the bar shown; before a bar shows (or between the two), a line of its own.
        if (steps) stepBar.update({ idle: next });
        else if (warmup === 'shown') warmupBar.update({ idle: next });
        else log(next ? next.slice(3) : 'every task queue the run waits on has a worker again');
      }
      idle = next;
    }
    await Promise.race([result.catch(() => undefined), new Promise((r) => setTimeout(r, pollSeconds * 1000))]);
  }
  if (warmup === 'shown') warmupBar.stop();
  if (steps) stepBar.stop();
  return result;
}
