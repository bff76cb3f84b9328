/**
 * Follows a running workflow from the terminal: a progress bar fed by the `progress` query
 * (step, train success, mean episode score, seconds per step) until the run closes.
 */
import { SingleBar, Presets } from 'cli-progress';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { progressQuery, Progress } from '../workflows/api';
import type { StarpoRunResult } from '../workflows';
import { formatNumber } from '../workflows/format';

/**
 * "warm-up step N, loss L" from the heartbeat details of the running prepareRun activity
 * (activities/prepare.ts heartbeats {warmupStep, loss}), else "preparing".
 */
async function warmupPhase(handle: WorkflowHandle): Promise<string> {
  const pending = (await handle.describe()).raw.pendingActivities ?? [];
  const payload = pending.find((a) => a.activityType?.name === 'prepareRun')?.heartbeatDetails?.payloads?.[0];
  if (!payload) return 'preparing';
  const details = defaultPayloadConverter.fromPayload<{ warmupStep?: number; loss?: number }>(payload);
  return details.warmupStep === undefined ? 'preparing' : `warm-up step ${details.warmupStep + 1}, loss ${formatNumber(details.loss)}`;
}

/**
 * Shows progress until the workflow completes, then returns its result.
 * @throws WorkflowFailedError when the run fails (the CLI maps it to exit code 1)
 */
export async function attach(client: Client, runId: string, pollSeconds = 2): Promise<StarpoRunResult> {
  const handle = client.workflow.getHandle(runId);
  const bar = new SingleBar(
    {
      format: 'step {value}/{total} [{bar}] {phase} | train success {success} | score {score} | {sps} s/step',
      hideCursor: false,
      noTTYOutput: true, // when piped (CI, logs), print a line every notTTYSchedule ms instead
      notTTYSchedule: 10_000,
    },
    Presets.shades_classic,
  );
  let started = false;
  let finished = false;
  const result = handle.result().finally(() => {
    finished = true;
  });
  while (!finished) {
    try {
      const p: Progress = await handle.query(progressQuery);
      const payload = {
        phase: p.phase === 'preparing' ? await warmupPhase(handle) : p.phase, success: formatNumber(p.lastMetrics['env/success']), score: formatNumber(p.lastMetrics['env/score']),
        sps: formatNumber(p.secondsPerStep, 1),
      };
      if (!started) {
        bar.start(p.maxSteps, p.step, payload);
        started = true;
      } else bar.update(p.step, payload);
    } catch {
      // no worker has answered the query yet (starting up); keep waiting
    }
    await Promise.race([result.catch(() => undefined), new Promise((r) => setTimeout(r, pollSeconds * 1000))]);
  }
  if (started) bar.stop();
  return result;
}

