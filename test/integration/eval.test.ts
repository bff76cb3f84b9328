/**
 * `starpo eval` and the run in the Temporal UI (summary, details, memo), through the real Temporal
 * dev server and S3 server with the control, rollout and update workers as processes: a 2-step run of
 * the test fixture started by `starpo train`'s code (validation at steps 0 and 2, two val shards),
 * then an evaluation of its final checkpoint that must reproduce the final validation exactly (every
 * val/ metric, the same episodes on the same states) without touching the run's objects; the
 * evaluation and the run carry their summaries, details and memo; bad arguments exit 2.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { parse, stringify } from 'yaml';
import { endpointsToEnv } from '../../infra/env';
import { type EvalOutput, evaluate } from '../../src/cli/eval';
import { runInputFromFile } from '../../src/cli/run_input';
import { train } from '../../src/cli/train';
import type { StarpoRunResult, Trajectory } from '../../src/contract';
import { EVAL_WORKFLOW_TYPE } from '../../src/contract';
import { defaultBackend, hostBackends, requestedBackend } from '../../src/model/backend_choice';
import { evalResultKey, rolloutKey } from '../../src/storage/keys';
import { runDetails, runSummary } from '../../src/workflows/run_text';
import { starpoCli } from '../helpers/cli';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();
const quiet = () => undefined;
const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', `it-eval-${Date.now()}`);
input.config.val_env_manager.max_env_num_per_worker = 4; // 8 val episodes in 2 shards
const runId = input.runId;
let training: Promise<StarpoRunResult> | null = null;

/**
 * Runs `fn` (train(), evaluate()) with the test servers in the environment, as `starpo` finds them,
 * and restores it after (with them set, the stack's teardown would take the servers for external ones).
 */
async function onTestServers<T>(fn: () => Promise<T>): Promise<T> {
  const env = endpointsToEnv(stack.servers.endpoints);
  const saved = Object.keys(env).map((k) => [k, process.env[k]] as const);
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** The run, trained once by the first test that needs it (the stack is up by then). */
function trainedRun(): Promise<StarpoRunResult> {
  training ??= (async () => {
    await onTestServers(() => train(input, { workers: false, rolloutWorkers: 1, log: quiet }));
    return stack.client.workflow.getHandle(runId).result();
  })();
  return training;
}

/** Runs `starpo <args>` against the test servers; never rejects. */
const starpo = (...args: string[]) => starpoCli(stack.servers.endpoints, ...args);

/** The trajectories of a validation's shards, in shard order. */
async function valEpisodes(step: number, shards: number, evalName?: string): Promise<Trajectory[]> {
  const parts = await Promise.all(
    Array.from({ length: shards }, (_, k) => stack.store.getJsonlGz<Trajectory>(rolloutKey(runId, step, 'val', k, evalName))),
  );
  return parts.flat();
}

/** Key and size of every object of the run outside its evals/ folder. */
async function runObjects(): Promise<string[]> {
  return (await stack.store.list(`runs/${runId}/`))
    .filter((o) => !o.key.includes('/evals/'))
    .map((o) => `${o.key} ${o.bytes}`)
    .sort();
}

test('starpo eval of the final checkpoint reproduces the final validation on the same states, apart from the run', async () => {
  const trained = await trainedRun();
  assert.equal(trained.steps, 2);
  const last = trained.lastValidation;
  assert.ok(last && last.step === 2, 'the run validated its final checkpoint');
  const before = await runObjects();

  const out: EvalOutput = await onTestServers(() => evaluate({ target: runId }, { workers: false, rolloutWorkers: 1, log: quiet }));
  assert.equal(out.step, 2);
  assert.deepEqual(out.checkpoint, trained.finalCheckpoint, 'the default is the latest checkpoint');
  assert.deepEqual(out.metrics, last.metrics, 'every val/ metric equals the final validation');
  assert.deepEqual(Object.keys(out.tags), ['FrozenLake']);
  assert.deepEqual(out.tags.FrozenLake, {
    episodes: 8,
    success: last.metrics['val/env/FrozenLake/success'],
    score: last.metrics['val/FrozenLake/score'],
  });
  assert.equal(out.episodes, 8);

  // the same states (seeds, groups) played the same way: the episodes are identical
  const trainedEpisodes = await valEpisodes(2, 2);
  const evalEpisodes = await valEpisodes(2, 2, out.name);
  assert.equal(evalEpisodes.length, 8);
  assert.deepEqual(
    evalEpisodes.map((t) => t.seed),
    trainedEpisodes.map((t) => t.seed),
  );
  assert.deepEqual(evalEpisodes, trainedEpisodes);

  // stored under evals/<name>/, the run's own objects untouched
  const stored = (await stack.store.getJson(evalResultKey(runId, out.name))) as Record<string, unknown>;
  const { resultKey, workflowId, ...result } = out;
  assert.equal(resultKey, evalResultKey(runId, out.name));
  assert.deepEqual(stored, result);
  assert.deepEqual(await runObjects(), before);

  // the evaluation is a workflow of its own in Temporal, with its summary and details
  const d = await stack.client.workflow.getHandle(workflowId).describe();
  assert.equal(d.type, EVAL_WORKFLOW_TYPE);
  assert.equal(await d.staticSummary(), `eval of ${runId} step 2: FrozenLake x 8 episodes (tiny_frozen_lake)`);
  assert.match((await d.staticDetails()) ?? '', new RegExp(`checkpoint: \`${trained.finalCheckpoint.key}\` \\(step 2\\)`));

  // the CLI with a checkpoint key and --json: the same evaluation (its stored shards are reused)
  const cli = await starpo('eval', trained.finalCheckpoint.key, '--json', '--no-workers');
  assert.equal(cli.code, 0, cli.stderr);
  // the bar counts the 2 shards from its first line (while eval.json is written too), not 0/1 then 2/2
  assert.match(cli.stderr, /2\/2 shards done/);
  assert.doesNotMatch(cli.stderr, /\/1 shards done/);
  const printed = JSON.parse(cli.stdout) as EvalOutput;
  assert.equal(printed.name, out.name);
  assert.deepEqual(printed.metrics, last.metrics);
});

test("starpo eval --episodes plays more val groups: the first ones are the final validation's", async () => {
  await trainedRun();
  const out = await onTestServers(() =>
    evaluate({ target: runId, step: 2, episodes: 12 }, { workers: false, rolloutWorkers: 1, log: quiet }),
  );
  assert.equal(out.episodes, 12);
  assert.equal(out.tags.FrozenLake.episodes, 12);
  const episodes = await valEpisodes(2, 3, out.name); // 12 groups of 1, 4 envs per shard
  assert.deepEqual(
    episodes.slice(0, 8).map((t) => t.seed),
    (await valEpisodes(2, 2)).map((t) => t.seed),
  );
  const text = await starpo('eval', runId, '--step', '2', '--episodes', '12', '--no-workers');
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^TAG\s+EPISODES\s+SUCCESS\s+SCORE$/m);
  assert.match(text.stdout, new RegExp(`^FrozenLake\\s+12\\s+${out.tags.FrozenLake.success.toFixed(3)}\\s+`, 'm'));
  assert.match(text.stdout, /12 episodes = 12 groups x group_size 1, the validation states of step 2/);
});

test('starpo eval: an unknown run, a missing step or checkpoint key, bad --episodes and a malformed target exit 2 naming the value', async () => {
  const trained = await trainedRun();
  const unknown = await starpo('eval', 'no-such-run', '--no-workers');
  assert.equal(unknown.code, 2);
  assert.match(
    unknown.stderr,
    /^error: run "no-such-run" not found: no runs\/no-such-run\/run.json in bucket \S+ \(see `starpo list`\)\n$/,
  );
  assert.doesNotMatch(unknown.stderr, /workers:/, 'no worker started');

  const step = await starpo('eval', runId, '--step', '7', '--no-workers');
  assert.equal(step.code, 2);
  assert.match(step.stderr, new RegExp(`--step 7: run ${runId} has no checkpoint at step 7; allowed: 0, 1, 2`));
  const key = `runs/${runId}/checkpoints/step-000099/manifest.json`;
  const missingKey = await starpo('eval', key, '--no-workers');
  assert.equal(missingKey.code, 2);
  assert.match(missingKey.stderr, new RegExp(`^error: ${key}: run ${runId} has no checkpoint at step 99; allowed: 0, 1, 2$`, 'm'));

  const zero = await starpo('eval', runId, '--episodes', '0', '--no-workers');
  assert.equal(zero.code, 2);
  assert.match(zero.stderr, /--episodes.*"0" is not a positive integer/);

  // a config whose val groups have 2 members: 3 episodes are not whole groups
  const dir = mkdtempSync(join(tmpdir(), 'starpo-eval-'));
  const raw = parse(readFileSync('test/fixtures/tiny_frozen_lake.yaml', 'utf8')) as { val_env_manager: { group_size: number } };
  raw.val_env_manager.group_size = 2;
  writeFileSync(join(dir, 'pairs.yaml'), stringify(raw));
  const episodes = await starpo('eval', runId, '--config', join(dir, 'pairs.yaml'), '--episodes', '3', '--no-workers');
  assert.equal(episodes.code, 2);
  assert.match(
    episodes.stderr,
    /--episodes: invalid config\n\s+- 3 is not a positive multiple of val_env_manager.group_size \(2\); allowed: k \* 2/,
  );

  const both = await starpo('eval', trained.finalCheckpoint.key, '--step', '1', '--no-workers');
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--step 1: .* already names a checkpoint/);

  const malformed = await starpo('eval', '../etc', '--no-workers');
  assert.equal(malformed.code, 2);
  assert.match(malformed.stderr, /"?\.\.\/etc"?: not a run id or a checkpoint key/);
});

test('the run in the Temporal UI: static summary and details, current details, memo, activity summaries', async () => {
  const trained = await trainedRun();
  const handle = stack.client.workflow.getHandle(runId);
  const d = await handle.describe();
  assert.equal(await d.staticSummary(), runSummary(input));
  assert.equal(await d.staticSummary(), 'StarPO tiny_frozen_lake: FrozenLake with tiny, 2 steps');
  const details = (await d.staticDetails()) ?? '';
  assert.equal(details, runDetails(input));
  for (const line of [
    'config `tiny_frozen_lake`',
    '- model: `tiny`',
    '- max_steps: 2',
    'train: 4 groups x 4 (rollout_batch_size 16), tags FrozenLake',
    `\`starpo report ${runId}\``,
    `\`starpo eval ${runId}\``,
    `\`starpo status ${runId}\``,
  ]) {
    assert.ok(details.includes(line), `static details hold ${JSON.stringify(line)}`);
  }
  assert.equal(d.memo?.report, `starpo report ${runId}`);

  // the UI reads the current details through the built-in metadata query
  const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  const val = trained.lastValidation?.metrics['val/env/success'] ?? NaN;
  // ... and, on a second line, where the last step's rollouts and update computed (the workers' defaults here)
  const on = (role: 'rollout' | 'update') => `${requestedBackend(process.env, defaultBackend(role, hostBackends()))} (CPU)`;
  assert.equal(
    metadata.currentDetails?.replace(/\d+\.\d s\/step/, 'T s/step'),
    `step 2/2 · done · train success ${trained.lastMetrics['env/success'].toFixed(3)} · val success ${val.toFixed(3)} (step 2) · T s/step\n\n` +
      `rollout ${on('rollout')}, update ${on('update')}`,
  );

  // every activity carries a summary (user metadata of ActivityTaskScheduled)
  const history = await handle.fetchHistory();
  const summaries = (history.events ?? [])
    .map((e) => e.userMetadata?.summary)
    .filter((p): p is temporal.api.common.v1.IPayload => !!p && !!p.data)
    .map((p) => defaultPayloadConverter.fromPayload<string>(p));
  for (const s of [
    'warm-up (step-0 policy) and run.json',
    'validation step 0 shard 1/2',
    'rollout step 0 shard 2/2',
    'update step 1 -> checkpoint step 2',
    'metrics step 2 (final validation)',
  ]) {
    assert.ok(summaries.includes(s), `an activity summary ${JSON.stringify(s)} (have: ${summaries.join('; ')})`);
  }
});
