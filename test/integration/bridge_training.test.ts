/**
 * Runs on envs served from Python by the bridge (python/starpo_envs), through the real Temporal and S3 servers
 * and worker processes, each server started by the workers themselves (env_config.command, `starpo env serve`):
 * Gymnasium's FrozenLake with the solver warm-up on the server's plans, its server SIGKILLed while episodes are
 * in play and started again by the worker, the run complete with those episodes counted and replaced; a
 * reasoning-gym dataset, a GEM game and an env of our own (test/fixtures/openenv/guess_env.py, served by
 * openenv-core) trained end to end, the last shown by `starpo report` and `starpo trajectories` as any env. The first run makes the bridge's venv from PyPI (about a minute).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { endpointsToEnv } from '../../infra/env';
import { ENV_VENV, ensureVenv } from '../../infra/env_venv';
import { freePort } from '../../infra/ports';
import { runInputFromFile } from '../../src/cli/run_input';
import { STARPO_BIN } from '../../src/cli/spawn_workers';
import type { StarpoRunResult, Trajectory } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { metricsKey, rolloutKey } from '../../src/storage/keys';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();
const FIXTURE = 'test/fixtures/tiny_frozen_lake.yaml';

before(() => ensureVenv(ENV_VENV, { log: (line) => console.log(line) }), { timeout: 1_800_000 });

/** An openenv tag whose server the workers start: `starpo env serve <spec>` on `port`. */
function bridgeTag(tag: string, spec: string, port: number, config: Record<string, unknown>, envConfig: string): string {
  const command = `${process.execPath} ${STARPO_BIN} env serve ${spec} --port ${port} --config '${JSON.stringify(config)}'`;
  return (
    `+custom_envs.${tag}={env_type: openenv, max_steps: 4, max_tokens_per_step: 24, agent_system_template: "", agent_template: "{observation}", ` +
    `env_config: {url: "http://127.0.0.1:${port}", command: ${JSON.stringify(command)}, ${envConfig}}}`
  );
}

async function train(runId: string, overrides: string[]): Promise<StarpoRunResult> {
  const { input } = runInputFromFile(FIXTURE, runId, overrides);
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: runId, args: [input] });
  return handle.result();
}

const stepMetrics = (runId: string, steps: number) =>
  Promise.all(
    Array.from(
      { length: steps },
      async (_, s) => ((await stack.store.getJson(metricsKey(runId, s))) as { metrics: Record<string, number> }).metrics,
    ),
  );

/** The worker logs whose names start with `prefix`, joined. */
const workerLogs = (prefix: string) =>
  readdirSync(stack.logDir)
    .filter((f) => f.startsWith(prefix))
    .map((f) => readFileSync(join(stack.logDir, f), 'utf8'))
    .join('\n');

/** The TCP connections established to 127.0.0.1:`port` (/proc/net/tcp's state 01): open sessions, and at most a kept-alive health check. */
function connections(port: number): number {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .filter((line) => {
      const f = line.trim().split(/\s+/);
      return f[1]?.endsWith(`:${hexPort}`) && f[3] === '01';
    }).length;
}

/** The pid of the bridge's Python server on `port`, from /proc's command lines. */
function serverPid(port: number): number | null {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (argv.includes('starpo_envs') && argv.includes(String(port)) && /python/.test(argv[0])) return Number(pid);
    } catch {
      // the process ended meanwhile
    }
  }
  return null;
}

test("Gymnasium's FrozenLake through the bridge: a SIGKILLed server is started again, its episodes counted and replaced, the run completes", async () => {
  const runId = `it-bridge-lake-${Date.now()}`;
  const port = await freePort();
  const lake = { size: 4, p: 0.8, is_slippery: false, format_penalty: -0.01 };
  const instruction = 'env_instruction: "FrozenLake. Reach G, avoid O. P is you. Answer <answer>Left|Down|Right|Up</answer>."';
  const run = train(runId, [
    'max_steps=3',
    'eval_steps=10',
    'warmup.type=solver',
    'train_env_manager.tags=[BridgeLake]',
    'val_env_manager.tags=[BridgeLake]',
    bridgeTag('BridgeLake', 'gymnasium:FrozenLake-v1', port, lake, `plan_field: plan, ${instruction}`),
  ]);
  // Once step 0 is stored, kill the server while step 1's rollout has sessions open (a worker's shard opens 8).
  let killed: number | null = null;
  while (killed === null) {
    if (await stack.store.exists(metricsKey(runId, 1))) assert.fail('step 1 ended before a session of it was seen');
    if ((await stack.store.exists(metricsKey(runId, 0))) && connections(port) >= 4) {
      killed = serverPid(port);
      assert.ok(killed !== null, 'the server on the port is the bridge');
      process.kill(killed, 'SIGKILL');
    } else await new Promise((r) => setTimeout(r, 10));
  }
  const result = await run;
  assert.equal(result.steps, 3);
  const metrics = await stepMetrics(runId, 3);
  const sum = (key: string) => metrics.reduce((a, m) => a + (m[key] ?? 0), 0);
  assert.ok(metrics[1]['env/failed_episodes'] >= 1, `step 1 failed ${metrics[1]['env/failed_episodes']} episodes`);
  assert.ok(metrics[1]['env/replaced_groups'] >= 1);
  assert.equal(sum('env/dropped_groups'), 0, 'every failed group was played again');
  assert.ok(
    metrics.every((m) => Number.isFinite(m['actor/pg_loss'])),
    'each update ran on its complete batch',
  );
  const stored = (await Promise.all([0, 1].map((k) => stack.store.getJsonlGz<Trajectory>(rolloutKey(runId, 1, 'train', k))))).flat();
  assert.equal(stored.length, 16, "step 1's batch is complete");
  assert.ok(
    stored.every((t) => /P/.test(t.turns[0].observation)),
    'the lake as text',
  );
  assert.match(workerLogs('rollout'), /BridgeLake env \d+ \(group \d+, seed \d+\): (reset|step \d+) threw: ws:\/\/127\.0\.0\.1:\d+\/ws: /);
  const restarted = serverPid(port);
  assert.ok(restarted !== null && restarted !== killed, 'a new server answers on the port');
  // Started by the update worker for the warm-up (the rollout workers found it answering), then by a rollout worker.
  const starts = workerLogs('').match(/starpo_envs: serving gymnasium:FrozenLake-v1/g) ?? [];
  assert.ok(starts.length >= 2, `started ${starts.length} time(s)`);
});

test('a reasoning-gym dataset trains end to end through the bridge', async () => {
  const runId = `it-bridge-arith-${Date.now()}`;
  const port = await freePort();
  const result = await train(runId, [
    'warmup.type=none',
    'train_env_manager.tags=[Arithmetic]',
    'val_env_manager.tags=[Arithmetic]',
    bridgeTag(
      'Arithmetic',
      'reasoning_gym:basic_arithmetic',
      port,
      { max_terms: 2, max_digits: 1, format_penalty: -0.1 },
      'env_instruction: "Answer with the number in <answer></answer>."',
    ),
  ]);
  assert.equal(result.steps, 2);
  const metrics = await stepMetrics(runId, 2);
  assert.ok(metrics.every((m) => Number.isFinite(m['actor/pg_loss']) && m['env/failed_episodes'] === 0));
  assert.ok(metrics[0]['val/env/Arithmetic/success'] >= 0);
  const stored = (await Promise.all([0, 1].map((k) => stack.store.getJsonlGz<Trajectory>(rolloutKey(runId, 0, 'train', k))))).flat();
  assert.equal(stored.length, 16);
  for (const t of stored) {
    assert.equal(t.turns.length, 1, 'one question per episode');
    assert.match(t.turns[0].observation, /\d/, 'a reasoning-gym question');
    assert.ok([-0.1, 0, 1].includes(t.episodeScore) || (t.episodeScore > 0 && t.episodeScore < 1));
  }
});

test("a GEM game trains end to end through the bridge, its episodes GEM's own", async () => {
  const runId = `it-bridge-gem-${Date.now()}`;
  const port = await freePort();
  const result = await train(runId, [
    'warmup.type=none',
    'train_env_manager.tags=[GuessNumber]',
    'val_env_manager.tags=[GuessNumber]',
    'sequence_length=1536', // GEM's rules are a 500-character first prompt
    bridgeTag(
      'GuessNumber',
      'gem:game:GuessTheNumber-v0-easy',
      port,
      { max_turns: 3 },
      'env_instruction: "Answer with a number in <answer></answer>."',
    ),
  ]);
  assert.equal(result.steps, 2);
  const metrics = await stepMetrics(runId, 2);
  assert.ok(metrics.every((m) => Number.isFinite(m['actor/pg_loss']) && m['env/failed_episodes'] === 0));
  assert.ok(metrics[0]['val/env/GuessNumber/success'] >= 0);
  const stored = (await Promise.all([0, 1].map((k) => stack.store.getJsonlGz<Trajectory>(rolloutKey(runId, 0, 'train', k))))).flat();
  assert.equal(stored.length, 16);
  for (const t of stored) {
    assert.match(
      t.turns[0].observation,
      /^You are playing Guess The Number\.\nYou have to guess the number between 1 and 10 \(inclusive\) within 3 turns\./,
    );
    assert.ok(t.turns.length >= 1 && t.turns.length <= 3, `${t.turns.length} turns`);
    // GEM pays -0.1 for a move without a number (and ends the game), 1 for the number, 0 otherwise.
    assert.ok(
      [-0.1, 0, 1].some((r) => Math.abs(t.episodeScore - r) < 1e-9),
      `score ${t.episodeScore}`,
    );
  }
});

test('an env of your own served by openenv-core trains; the report and the trajectory browser show its turns as any env', async () => {
  const runId = `it-bridge-own-${Date.now()}`;
  const port = await freePort();
  const result = await train(runId, [
    'warmup.type=none',
    'train_env_manager.tags=[Guess]',
    'val_env_manager.tags=[Guess]',
    bridgeTag(
      'Guess',
      'test/fixtures/openenv/guess_env.py:GuessEnv',
      port,
      { top: 8, turns: 3 },
      'env_instruction: "Guess my number. Answer <answer>N</answer>."',
    ),
  ]);
  assert.equal(result.steps, 2);
  const metrics = await stepMetrics(runId, 2);
  assert.ok(metrics.every((m) => m['env/failed_episodes'] === 0 && Number.isFinite(m['env/Guess/success'])));
  assert.ok(Number.isFinite(metrics[0]['val/env/Guess/success']));
  const stored = (await Promise.all([0, 1].map((k) => stack.store.getJsonlGz<Trajectory>(rolloutKey(runId, 0, 'train', k))))).flat();
  assert.ok(stored.every((t) => t.turns[0].observation === 'I think of a number from 1 to 8. Guess it.'));

  const starpo = (...args: string[]) =>
    spawnSync(process.execPath, [STARPO_BIN, ...args], {
      env: { ...process.env, ...endpointsToEnv(stack.servers.endpoints) },
      encoding: 'utf8',
    });
  const shown = starpo('trajectories', runId, '--step', '0', '--width', '160');
  assert.equal(shown.status, 0, shown.stderr);
  assert.match(shown.stdout, new RegExp(`^run ${runId} · step 0 · train · 4 groups, 16 trajectories$`, 'm'));
  assert.match(shown.stdout, /I think of a number from 1 to 8\. Guess it\./);
  assert.match(shown.stdout, /^turn 1 · reward -?\d\.\d{3} · /m);
  const out = mkdtempSync(join(tmpdir(), 'starpo-own-env-'));
  try {
    const made = starpo('report', runId, '-o', join(out, 'report.html'));
    assert.equal(made.status, 0, made.stderr);
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    assert.ok(html.includes('I think of a number from 1 to 8. Guess it.'), 'the report shows the env text');
    assert.ok(html.includes('COMPLETED after 2 steps'), 'and the run state from Temporal');
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
