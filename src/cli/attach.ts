/**
 * Follows a running workflow from the terminal: while the run prepares, a warm-up bar fed by the
 * heartbeat details of the pending prepareRun activity (SFT step of total, loss; read from the
 * workflow's describe, so no workflow change is needed); then a step bar fed by the `progress` query
 * (step, train success, mean episode score, seconds per step) until the run closes.
 */

import type { Client, WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { Presets, SingleBar } from 'cli-progress';
import { type Progress, progressQuery, type StarpoRunResult } from '../contract';
import { formatNumber } from '../workflows/format';

/** Options shared by both bars: on a TTY redrawn in place; when piped (CI, logs) a line every 10 s. */
const BAR_OPTIONS = { hideCursor: false, noTTYOutput: true, notTTYSchedule: 10_000 };

/** The warm-up's SFT progress: steps done (1-based), steps in all, last loss (nats per response token). */
interface WarmupProgress {
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
async function warmupProgress(handle: WorkflowHandle): Promise<WarmupProgress | null> {
  const [details] = heartbeatDetails<{ warmupStep?: number; warmupSteps?: number; loss?: number }>(await handle.describe(), 'prepareRun');
  if (details?.warmupStep === undefined || details.warmupSteps === undefined) return null;
  return { done: details.warmupStep + 1, total: details.warmupSteps, loss: details.loss };
}

/**
 * Shows progress until the workflow completes, then returns its result.
 * @throws WorkflowFailedError when the run fails (the CLI maps it to exit code 1)
 */
export async function attach(client: Client, runId: string, pollSeconds = 2): Promise<StarpoRunResult> {
  const handle = client.workflow.getHandle(runId);
  const warmupBar = new SingleBar(
    { ...BAR_OPTIONS, format: 'warm-up {value}/{total} SFT steps [{bar}] loss {loss}' },
    Presets.shades_classic,
  );
  const stepBar = new SingleBar(
    { ...BAR_OPTIONS, format: 'step {value}/{total} [{bar}] {phase} | train success {success} | score {score} | {sps} s/step' },
    Presets.shades_classic,
  );
  let warmup: 'none' | 'shown' | 'done' = 'none';
  let steps = false;
  let finished = false;
  const result = handle.result().finally(() => {
    finished = true;
  });
  while (!finished) {
    try {
      const p: Progress = await handle.query(progressQuery);
      if (p.phase === 'preparing') {
        const w = await warmupProgress(handle);
        if (w && warmup === 'none') warmupBar.start(w.total, w.done, { loss: formatNumber(w.loss) });
        else if (w) warmupBar.update(w.done, { loss: formatNumber(w.loss) });
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
        };
        if (!steps) stepBar.start(p.maxSteps, p.step, payload);
        else stepBar.update(p.step, payload);
        steps = true;
      }
    } catch {
      // no worker has answered the query yet (starting up); keep waiting
    }
    await Promise.race([result.catch(() => undefined), new Promise((r) => setTimeout(r, pollSeconds * 1000))]);
  }
  if (warmup === 'shown') warmupBar.stop();
  if (steps) stepBar.stop();
  return result;
}
