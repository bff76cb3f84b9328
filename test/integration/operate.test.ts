/**
 * Operating runs and long runs (pause, stop, continue-as-new), on a real Temporal dev server with the
 * real workflow and STUB activities, as the test is about control flow: the stubs return fixed refs and
 * metrics at once, and `gate()` holds one activity until the test lets it
 * go, so pause and stop land at a known step without timing assumptions. The CLI commands run as
 * child processes of bin/starpo.js against the same server.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { runInputFromFile } from '../../src/cli/run_input';
import type { StarpoActivities as Activities, ObjectRef, RunConfig, RunSpec, StarpoRunResult, UpdateOutput } from '../../src/contract';
import {
  configQuery,
  pauseUpdate,
  progressQuery,
  SEARCH_ATTRIBUTE_KEYS,
  stopUpdate,
  TASK_QUEUES,
  unpauseUpdate,
  WORKFLOW_TYPE,
} from '../../src/contract';
import { STEPS_PER_RUN } from '../../src/workflows/continue_as_new';
import { starpoCli } from '../helpers/cli';
import { startTestServers, type TestServers } from '../helpers/servers';

let servers: TestServers;
let client: Client;
let workers: Worker[] = [];
let running: Promise<unknown>;

/** Activity calls of the stubs, in order: `${type} ${runId} ${split} ${step}`. */
const calls: string[] = [];
const configs = new Map<string, RunConfig>();
/** Gates by `${type} ${runId} ${split} ${step}`: the activity waits in `wait` until `open()`. */
const gates = new Map<string, { entered: () => void; wait: Promise<void> }>();

/** Holds the activity `key` when it starts; resolves when it has started; call the returned function to let it go. */
function gate(key: string): { reached: Promise<void>; open: () => void } {
  let entered!: () => void;
  let open!: () => void;
  const reached = new Promise<void>((r) => (entered = r));
  gates.set(key, { entered: () => entered(), wait: new Promise<void>((r) => (open = r)) });
  return { reached, open };
}

async function pass(key: string): Promise<void> {
  calls.push(key);
  const g = gates.get(key);
  if (g) {
    g.entered();
    await g.wait;
  }
}

const ref = (key: string): ObjectRef => ({ bucket: 'stub', key, sha256: '0'.repeat(64), bytes: 1 });
const manifest = (runId: string, step: number) => ref(`runs/${runId}/checkpoints/step-${String(step).padStart(6, '0')}/manifest.json`);

/** The training workflow's activities (real names and types) that only record the call and return fixed values. */
const stubs: Omit<Activities, 'prepareEval' | 'writeEvalResult' | 'recordSweep'> = {
  prepareRun: async ({ runId, config }) => {
    configs.set(runId, config);
    await pass(`prepareRun ${runId} - 0`);
    return { checkpoint: manifest(runId, 0), metrics: { 'warmup/type_format': 1 } };
  },
  rollout: async ({ runId, step, split, shard }) => {
    await pass(`rollout ${runId} ${split} ${step}`);
    const counts = { 'env/success': 4, 'env/score': 4 };
    return {
      trajectories: ref(`runs/${runId}/rollouts/${step}/${split}-${shard}`),
      metrics: { sums: { 'env/success': 2, 'env/score': 1 }, counts, totals: {} },
      seconds: 0.01,
    };
  },
  update: async ({ runId, step }): Promise<UpdateOutput> => {
    await pass(`update ${runId} train ${step}`);
    // A run named *-flat plays groups without reward variance: its filter keeps nothing and its update is skipped.
    if (runId.includes('-flat-'))
      return {
        checkpoint: manifest(runId, step + 1),
        metrics: { 'rollout/in_group_std': 0, 'rollout/filter_kept_count': 0 },
        skipReason: 'flat',
      };
    return {
      checkpoint: manifest(runId, step + 1),
      metrics: { 'actor/pg_loss': 0.5, 'actor/entropy': 1, 'rollout/in_group_std': 0.5 },
      skipReason: null,
    };
  },
  writeMetrics: async ({ runId, step }) => {
    await pass(`writeMetrics ${runId} - ${step}`);
  },
  loadRun: async (runId) => {
    await pass(`loadRun ${runId} - -`);
    return { runId, configName: 'tiny_frozen_lake', config: configs.get(runId) as RunConfig };
  },
};

/** A run of the tiny fixture config with the given steps and evaluation interval; one rollout shard per step. */
function tinyRun(name: string, maxSteps: number, evalSteps: number): RunSpec {
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', `${name}-${Date.now()}`);
  input.config.max_steps = maxSteps;
  input.config.eval_steps = evalSteps;
  input.config.train_env_manager.max_env_num_per_worker = 16;
  return input;
}

function start(input: RunSpec) {
  return client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: input.runId, args: [input] });
}

/** Runs `starpo <args>` against the test servers; never rejects. */
const starpo = (...args: string[]) => starpoCli(servers.endpoints, ...args);

/** Queries progress until `ok` holds (polling, not timing: each answer is checked, none is assumed). */
async function progressUntil(runId: string, ok: (p: Awaited<ReturnType<typeof queryProgress>>) => boolean) {
  for (;;) {
    const p = await queryProgress(runId);
    if (ok(p)) return p;
    await new Promise((r) => setTimeout(r, 50));
  }
}
const queryProgress = (runId: string) => client.workflow.getHandle(runId).query(progressQuery);

/** Event count of every execution of a workflow id's continueAsNew chain, first to last. */
async function chainHistories(
  workflowId: string,
  firstRunId: string,
): Promise<Array<{ runId: string; events: temporal.api.history.v1.IHistoryEvent[] }>> {
  const out = [];
  let runId: string | null | undefined = firstRunId;
  while (runId) {
    const history: temporal.api.history.v1.IHistory = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events: temporal.api.history.v1.IHistoryEvent[] = history.events ?? [];
    out.push({ runId, events });
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
  }
  return out;
}

before(async () => {
  servers = await startTestServers();
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const connection = await NativeConnection.connect({ address: servers.endpoints.temporalAddress });
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../src/workflows'),
    logger: new DefaultLogger('WARN'),
  });
  workers = await Promise.all([
    Worker.create({ connection, taskQueue: TASK_QUEUES.control, workflowBundle }),
    Worker.create({ connection, taskQueue: TASK_QUEUES.rollout, activities: stubs }),
    Worker.create({ connection, taskQueue: TASK_QUEUES.update, activities: stubs }),
  ]);
  running = Promise.all(workers.map((w) => w.run())).finally(() => connection.close());
  client = new Client({ connection: await Connection.connect({ address: servers.endpoints.temporalAddress }) });
});

after(async () => {
  for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
  await running;
  await client?.connection.close();
  await servers?.stop();
});

test('300 steps continue as new every 100 with small histories; a pause at the boundary holds in the next run', async () => {
  const input = tinyRun('op-long', 300, 100);
  const boundary = gate(`update ${input.runId} train ${STEPS_PER_RUN - 1}`);
  const handle = await start(input);
  await boundary.reached;
  const reply = await handle.executeUpdate(pauseUpdate);
  assert.deepEqual(reply, { step: STEPS_PER_RUN - 1, takesEffectAtStep: STEPS_PER_RUN, phase: 'update' });
  boundary.open();

  const paused = await progressUntil(input.runId, (p) => p.phase === 'paused');
  assert.equal(paused.step, STEPS_PER_RUN);
  assert.equal(paused.paused, true);
  assert.notEqual((await handle.describe()).runId, handle.firstExecutionRunId, 'the pause is served by the continued run');
  assert.equal((await handle.query(configQuery))?.max_steps, 300, 'the continued run read its config back (loadRun)');
  const before = calls.length;
  for (let i = 0; i < 3; i++) assert.equal((await queryProgress(input.runId)).step, STEPS_PER_RUN, 'no step advances while paused');
  assert.equal(calls.length, before, 'no activity runs while paused');

  const status = await starpo('status', input.runId);
  assert.equal(status.code, 0, status.stderr);
  assert.match(status.stdout, /phase\s+paused/);
  assert.match(status.stdout, new RegExp(`step ${STEPS_PER_RUN}/300`));
  const unpause = await starpo('unpause', input.runId);
  assert.equal(unpause.code, 0, unpause.stderr);
  assert.match(unpause.stdout, new RegExp(`continues from step ${STEPS_PER_RUN}`));

  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, 300);
  assert.equal(result.stoppedBy, null);
  assert.deepEqual(
    result.validationCurve.map((v) => v.step),
    [0, 100, 200, 300],
    'the validation curve is carried across continueAsNew',
  );

  const chain = await chainHistories(input.runId, handle.firstExecutionRunId);
  const counts = chain.map((r) => r.events.length);
  console.log(`history events per run of the 300-step chain: ${counts.join(', ')}`);
  assert.equal(chain.length, 3);
  for (const n of counts) assert.ok(n < 10_000, `${n} events`);
  const inputBytes = chain.map((r) => r.events[0].workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data?.length ?? 0);
  console.log(`workflow input bytes per run: ${inputBytes.join(', ')}`);
  for (const n of inputBytes.slice(1)) assert.ok(n < 1000, `a continued run's input holds no config (${n} bytes)`);

  const listed = await starpo('list', '--json', '--query', `WorkflowId = '${input.runId}'`);
  assert.equal(listed.code, 0, listed.stderr);
  const firstStart = (await client.workflow.getHandle(input.runId, handle.firstExecutionRunId).describe()).startTime;
  assert.deepEqual(
    JSON.parse(listed.stdout).map((r: { runId: string; started: string }) => [r.runId, r.started]),
    [[input.runId, firstStart.toISOString()]],
    'list: one row, started when the chain began, not when its last execution did',
  );

  const last = await handle.describe();
  assert.equal(last.typedSearchAttributes.get(SEARCH_ATTRIBUTE_KEYS.step), 300);
  assert.equal(last.typedSearchAttributes.get(SEARCH_ATTRIBUTE_KEYS.config), 'tiny_frozen_lake');
  assert.equal(last.typedSearchAttributes.get(SEARCH_ATTRIBUTE_KEYS.valSuccess), 0.5);
});

test('stop finishes the step in flight, runs the final validation and completes with the reason; the CLI reports and refuses', async () => {
  const input = tinyRun('op-stop', 50, 10);
  const inFlight = gate(`update ${input.runId} train 5`);
  const finalValidation = gate(`rollout ${input.runId} val 6`);
  const handle = await start(input);
  await inFlight.reached;
  const stop = await starpo('stop', input.runId, '--reason', 'enough');
  assert.equal(stop.code, 0, stop.stderr);
  assert.match(stop.stdout, /stops after step 6/);
  assert.equal((await queryProgress(input.runId)).stopRequested, 'stop: enough');
  inFlight.open();

  await finalValidation.reached;
  await assert.rejects(
    handle.executeUpdate(pauseUpdate),
    (err: Error) => err instanceof WorkflowUpdateFailedError && /is finishing/.test(err.cause?.message ?? ''),
  );
  const rejected = await starpo('pause', input.runId);
  assert.equal(rejected.code, 2, 'a rejected update is bad input');
  assert.match(rejected.stderr, /pause rejected: .*is finishing/);
  finalValidation.open();

  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, 6);
  assert.equal(result.stoppedBy, 'stop: enough');
  assert.ok(calls.includes(`writeMetrics ${input.runId} - 5`), 'the step in flight wrote its metrics');
  assert.equal(result.lastValidation?.step, 6, 'the final validation ran at the stop step');
  assert.ok(!calls.includes(`rollout ${input.runId} train 6`), 'no step after the stop');

  const again = await starpo('stop', input.runId);
  assert.equal(again.code, 2);
  assert.match(again.stderr, /is completed; nothing to stop/);
  const unknown = await starpo('status', `no-such-run-${Date.now()}`);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown run id/);

  const status = await starpo('status', input.runId, '--json');
  assert.equal(JSON.parse(status.stdout).result.stoppedBy, 'stop: enough');
  let listed: Array<{ runId: string; status: string; step: number }> = [];
  while (!listed.some((r) => r.runId === input.runId && r.status === 'COMPLETED')) {
    const list = await starpo('list', '--json', '--query', 'StarpoConfig = "tiny_frozen_lake"');
    assert.equal(list.code, 0, list.stderr);
    listed = JSON.parse(list.stdout);
  }
  assert.equal(listed.find((r) => r.runId === input.runId)?.step, 6);
  assert.equal(new Set(listed.map((r) => r.runId)).size, listed.length, 'one row per run, continued executions left out');
});

/** Inputs of the train rollouts a history scheduled, in order. */
function trainRollouts(events: temporal.api.history.v1.IHistoryEvent[]): Array<{ step: number; policyStep?: number; policy: ObjectRef }> {
  return events.flatMap((e) => {
    const a = e.activityTaskScheduledEventAttributes;
    if (a?.activityType?.name !== 'rollout') return [];
    const input = JSON.parse(Buffer.from(a.input?.payloads?.[0]?.data ?? []).toString('utf8'));
    return input.split === 'train' ? [input] : [];
  });
}

test('async_generation_ratio 1: continue-as-new carries the checkpoints the next rollouts play with; pause launches nothing ahead; stop completes', async () => {
  const input = tinyRun('op-async', 2 * STEPS_PER_RUN + 10, 100);
  input.config.async_generation_ratio = 1;
  const held = gate(`rollout ${input.runId} train 60`);
  const handle = await start(input);
  await held.reached; // launched during step 59's update; step 60 then waits for it
  await progressUntil(input.runId, (p) => p.step === 60 && p.phase === 'rollout');
  assert.deepEqual(await handle.executeUpdate(pauseUpdate), { step: 60, takesEffectAtStep: 61, phase: 'rollout' });
  held.open();
  assert.equal((await progressUntil(input.runId, (p) => p.phase === 'paused')).step, 61);
  assert.ok(!calls.includes(`rollout ${input.runId} train 61`), 'a pause requested before the update launches no rollout ahead');
  await handle.executeUpdate(unpauseUpdate);

  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, 2 * STEPS_PER_RUN + 10);
  const chain = await chainHistories(input.runId, handle.firstExecutionRunId);
  assert.equal(chain.length, 3);
  const carried = chain.slice(1).map((r) => {
    const data = r.events[0].workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
    return (JSON.parse(Buffer.from(data ?? []).toString('utf8')) as { policies: Array<{ step: number; checkpoint: ObjectRef }> }).policies;
  });
  assert.deepEqual(
    carried.map((p) => p.map((k) => k.step)),
    [
      [99, 100],
      [199, 200],
    ],
    'the newest checkpoint and the one the next step plays with',
  );
  const perRun = chain.map((r) => trainRollouts(r.events));
  for (const rollouts of perRun) {
    for (const r of rollouts) {
      const policyStep = Math.max(r.step - 1, 0);
      assert.equal(r.policyStep, policyStep, `rollout step ${r.step}`);
      assert.equal(r.policy.key, manifest(input.runId, policyStep).key);
    }
  }
  // a run ends after the rollouts it launched ahead (step 100's), and the next launches them again with the
  // same input: the real activity then reuses the committed shard
  assert.equal(perRun[0].at(-1)?.step, STEPS_PER_RUN);
  assert.deepEqual(perRun[1][0], perRun[0].at(-1));
  assert.deepEqual(
    perRun
      .flat()
      .map((r) => r.step)
      .filter((s, i, all) => all.indexOf(s) !== i),
    [STEPS_PER_RUN, 2 * STEPS_PER_RUN],
  );

  const stopped = tinyRun('op-async-stop', 50, 10);
  stopped.config.async_generation_ratio = 1;
  const inFlight = gate(`update ${stopped.runId} train 5`);
  const stopHandle = await start(stopped);
  await inFlight.reached;
  await stopHandle.executeUpdate(stopUpdate, { args: ['enough'] });
  inFlight.open();
  const stopResult: StarpoRunResult = await stopHandle.result();
  assert.equal(stopResult.steps, 6);
  assert.equal(stopResult.lastValidation?.step, 6);
  assert.ok(calls.includes(`rollout ${stopped.runId} train 6`), "step 6 was launched with step 5's update, before the stop");
  assert.ok(!calls.includes(`update ${stopped.runId} train 6`), 'no update after the stop');
});

test('rollout_filter_empty_stop_steps: a run whose filter keeps nothing for that many steps stops, marking the step early_stopped/empty_filter', async () => {
  const input = tinyRun('op-flat', 20, 0);
  input.config.rollout_filter_empty_stop_steps = 3;
  const result: StarpoRunResult = await (await start(input)).result();
  assert.equal(result.steps, 3);
  assert.equal(result.stoppedBy, 'early stop: the rollout filter kept no group for 3 steps in a row (rollout_filter_empty_stop_steps 3)');
  assert.equal(result.lastMetrics['early_stopped/empty_filter'], 1);
});
