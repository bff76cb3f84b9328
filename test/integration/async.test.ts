/**
 * Asynchronous rollouts (async_generation_ratio = 1) end to end through the real
 * Temporal dev server and S3 server with the control, rollout and update workers as processes: step
 * k+1's rollout activities are scheduled with step k's checkpoint and overlap step k's update (read from
 * the activity events of the workflow history: the rollout started before the update ended and ended
 * after it started), every trajectory and shard record carries its staleness, the staleness metrics are
 * stored, and the run completes the same number of steps as a synchronous one.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { temporal } from '@temporalio/proto';
import { runInputFromFile } from '../../src/cli/run_input';
import type { RolloutInput, ShardRecord, StarpoRunResult, Trajectory, UpdateInput } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { checkpointPrefix, metricsKey, rolloutKey, rolloutRecordKey } from '../../src/storage/keys';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();

/** One activity of the history: its type, input, the workflow task that scheduled it and the times it started and closed (ms since epoch). */
interface ActivityRun {
  type: string;
  input: RolloutInput & UpdateInput;
  /** workflowTaskCompletedEventId of its ActivityTaskScheduled event: activities with the same one were scheduled together. */
  scheduledBy: string;
  started: number;
  ended: number;
}

const ms = (t: temporal.api.history.v1.IHistoryEvent['eventTime']) => Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);

/** Every completed activity of a workflow history, with the start and completion times its events carry. */
function activityRuns(events: temporal.api.history.v1.IHistoryEvent[]): ActivityRun[] {
  const scheduled = new Map<string, Pick<ActivityRun, 'type' | 'input' | 'scheduledBy'>>();
  const started = new Map<string, number>();
  const runs: ActivityRun[] = [];
  for (const e of events) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s) {
      const data = s.input?.payloads?.[0]?.data;
      const input = JSON.parse(Buffer.from(data ?? []).toString('utf8')) as ActivityRun['input'];
      scheduled.set(String(e.eventId), { type: s.activityType?.name ?? '', input, scheduledBy: String(s.workflowTaskCompletedEventId) });
    }
    if (e.activityTaskStartedEventAttributes) started.set(String(e.activityTaskStartedEventAttributes.scheduledEventId), ms(e.eventTime));
    const done = e.activityTaskCompletedEventAttributes;
    if (done) {
      const id = String(done.scheduledEventId);
      runs.push({ ...scheduled.get(id)!, started: started.get(id)!, ended: ms(e.eventTime) });
    }
  }
  return runs;
}

test("async_generation_ratio 1: step k+1 rollouts play step k's checkpoint during step k's update; staleness recorded; same steps", async () => {
  const steps = 3;
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', `it-async-${Date.now()}`, [
    `max_steps=${steps}`,
    'eval_steps=0',
    'async_generation_ratio=1',
  ]);
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, {
    taskQueue: TASK_QUEUES.control,
    workflowId: input.runId,
    args: [input],
  });
  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, steps, 'the same number of steps as a synchronous run');
  assert.equal(result.finalCheckpoint.key, `${checkpointPrefix(input.runId, steps)}manifest.json`);

  const runs = activityRuns((await handle.fetchHistory()).events ?? []);
  const updates = runs.filter((r) => r.type === 'update');
  const rollouts = runs.filter((r) => r.type === 'rollout' && r.input.split === 'train');
  assert.deepEqual(
    updates.map((u) => u.input.step),
    [0, 1, 2],
    'one update per step',
  );
  assert.equal(rollouts.length, 2 * steps, '2 shards per step, each played once, none beyond max_steps');

  const checkpointOf = new Map<number, string>([[0, updates[0].input.policy.key]]);
  for (const u of updates) checkpointOf.set(u.input.step + 1, `${checkpointPrefix(input.runId, u.input.step + 1)}manifest.json`);
  for (const r of rollouts) {
    const policyStep = Math.max(r.input.step - 1, 0);
    assert.equal(r.input.policyStep, policyStep, `rollout step ${r.input.step}: played by step ${policyStep}'s checkpoint`);
    assert.equal(r.input.policy.key, checkpointOf.get(policyStep));
  }
  for (const u of updates.slice(0, -1)) {
    // scheduled by the workflow task that scheduled the update; the stack's one rollout worker runs one
    // activity at a time, so the first shard runs during the update and the second may queue behind it
    const next = rollouts.filter((r) => r.input.step === u.input.step + 1);
    assert.equal(next.length, 2);
    for (const r of next)
      assert.equal(
        r.scheduledBy,
        u.scheduledBy,
        `rollout step ${r.input.step} shard ${r.input.shard} scheduled with update step ${u.input.step}`,
      );
    const first = next.reduce((a, b) => (a.started <= b.started ? a : b));
    assert.ok(
      first.started < u.ended && u.started < first.ended,
      `rollout step ${first.input.step} shard ${first.input.shard} [${first.started}, ${first.ended}] overlaps update step ${u.input.step} [${u.started}, ${u.ended}]`,
    );
  }

  for (let step = 0; step < steps; step++) {
    const staleness = Math.min(step, 1);
    for (const shard of [0, 1]) {
      const record = (await stack.store.getJson(rolloutRecordKey(input.runId, step, 'train', shard))) as ShardRecord;
      assert.deepEqual([record.policyStep, record.staleness], [step - staleness, staleness], `step ${step} shard ${shard} record`);
      const trajectories = await stack.store.getJsonlGz<Trajectory>(record.trajectories);
      assert.equal(record.trajectories.key, rolloutKey(input.runId, step, 'train', shard));
      assert.ok(trajectories.length > 0 && trajectories.every((t) => t.staleness === staleness && t.step === step));
    }
    const { metrics } = (await stack.store.getJson(metricsKey(input.runId, step))) as { metrics: Record<string, number> };
    assert.equal(metrics['rollout/staleness/mean'], staleness, `step ${step} metrics`);
    assert.equal(metrics['rollout/staleness/max'], staleness);
    assert.equal(metrics['rollout/discarded_stale'], 0);
    assert.ok(metrics['time/rollout_wait'] >= 0);
    assert.ok(Number.isFinite(metrics['actor/pg_loss']));
  }
});
