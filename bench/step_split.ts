/**
 * Seconds per step of the quickstart through Temporal + S3, split into rollout / update / orchestration.
 * Runs `starpo train` (src/cli/train.ts), then reads each step's metrics and the run's Temporal history.
 *
 *   node --import tsx bench/step_split.ts [config.yaml] [steps]      (default configs/frozen_lake.yaml, 6)
 */

import type { Payload } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/common';
import { resolveEndpoints } from '../infra/lifecycle';
import { runInputFromFile } from '../src/cli/run_input';
import { connectClient, train } from '../src/cli/train';
import { metricsKey } from '../src/storage/keys';
import { ObjectStore } from '../src/storage/object_store';

interface ActivityTiming {
  type: string;
  step: number;
  scheduled: number;
  started: number;
  closed: number;
}

/** Scheduled / started (last attempt) / closed times (ms) of every activity of a run, with its input's step. */
async function activityTimings(runId: string, e: Awaited<ReturnType<typeof resolveEndpoints>>): Promise<ActivityTiming[]> {
  const client = await connectClient(e);
  try {
    const history = await client.workflow.getHandle(runId).fetchHistory();
    const byId = new Map<string, ActivityTiming>();
    const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
      Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;
    for (const ev of history.events ?? []) {
      const s = ev.activityTaskScheduledEventAttributes;
      if (s) {
        const input = defaultPayloadConverter.fromPayload<{ step?: number }>((s.input?.payloads?.[0] ?? {}) as Payload);
        byId.set(String(ev.eventId), {
          type: s.activityType?.name ?? '',
          step: input?.step ?? -1,
          scheduled: ms(ev.eventTime),
          started: 0,
          closed: 0,
        });
      }
      const started = ev.activityTaskStartedEventAttributes;
      if (started) byId.get(String(started.scheduledEventId))!.started = ms(ev.eventTime);
      const done = ev.activityTaskCompletedEventAttributes;
      if (done) byId.get(String(done.scheduledEventId))!.closed = ms(ev.eventTime);
    }
    return [...byId.values()];
  } finally {
    await client.connection.close();
  }
}

/**
 * `starpo train` uses the local servers from `starpo infra up` or the environment, a control, 2 rollout and
 * an update worker process; the warm-up is reused from the store when it is there. Validation is off
 * (eval_steps=0): it is not part of a training step's cost. Per step:
 *  - rollout = time/rollout: the slowest rollout shard activity, measured inside it (policy load, generation,
 *    envs, shard writes);
 *  - update = time/update: the update activity from its start to the end of the StarPO update (trajectory
 *    reads, policy from the worker's cache or the store, the update itself);
 *  - orchestration = time/step - rollout - update: what Temporal and the store add: task dispatch to the
 *    workers, the checkpoint save and latest.json after the update, the workflow's own turns. The history
 *    splits it into dispatch (activity scheduled -> started) and the rest of the activities' time outside
 *    their measured part (for the update: saving its checkpoint).
 */
async function main(): Promise<void> {
  const [file = 'configs/frozen_lake.yaml', stepsArg = '6'] = process.argv.slice(2);
  const steps = Number(stepsArg);
  const { input } = runInputFromFile(file, `bench-split-${Date.now()}`, [`max_steps=${steps}`, 'eval_steps=0']);
  const log = (line: string) => console.error(line);
  await train(input, { workers: true, rolloutWorkers: 2, log });

  const e = await resolveEndpoints({ start: false });
  const store = new ObjectStore(e.s3);
  const timings = await activityTimings(input.runId, e);
  const rows: number[][] = [];
  console.log(`config ${file}, ${steps} steps, run ${input.runId}`);
  console.log('| step | time/step s | rollout s | update s | orchestration s | orchestration % | of which dispatch s | update save s |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (let step = 0; step < steps; step++) {
    const m = ((await store.getJson(metricsKey(input.runId, step))) as { metrics: Record<string, number> }).metrics;
    const [total, rollout, update] = [m['time/step'], m['time/rollout'], m['time/update']];
    const orchestration = total - rollout - update;
    const acts = timings.filter((a) => a.step === step && (a.type === 'rollout' || a.type === 'update'));
    const dispatch =
      acts.reduce((s, a) => Math.max(s, (a.started - a.scheduled) / 1000), 0) +
      acts.filter((a) => a.type === 'update').reduce((s, a) => s + (a.started - a.scheduled) / 1000, 0);
    const upd = acts.find((a) => a.type === 'update');
    const save = upd ? (upd.closed - upd.started) / 1000 - update : NaN;
    rows.push([total, rollout, update, orchestration, dispatch, save]);
    console.log(
      `| ${step} | ${total.toFixed(2)} | ${rollout.toFixed(2)} | ${update.toFixed(2)} | ${orchestration.toFixed(2)} | ${((100 * orchestration) / total).toFixed(1)} | ${dispatch.toFixed(2)} | ${save.toFixed(2)} |`,
    );
  }
  // Step 0 also loads the policy into freshly started workers: the steady state is steps 1..
  const steady = rows.slice(1);
  const mean = (k: number) => steady.reduce((s, r) => s + r[k], 0) / steady.length;
  console.log(
    `mean of steps 1-${steps - 1}: ${mean(0).toFixed(2)} s per step = rollout ${mean(1).toFixed(2)} + update ${mean(2).toFixed(2)} + ` +
      `orchestration ${mean(3).toFixed(2)} (${((100 * mean(3)) / mean(0)).toFixed(1)}%; dispatch ${mean(4).toFixed(2)}, update save ${mean(5).toFixed(2)})`,
  );
}

void main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
