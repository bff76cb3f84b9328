/**
 * Bench: per-step latency of the env bridge's FrozenLake (python/starpo_envs, Gymnasium behind openenv-core's
 * server) over a WebSocket session, measured by openenv-core's own client (test/fixtures/openenv/play_session.py,
 * one session per episode as starpo's `openenv` env type plays), against a step of starpo's built-in FrozenLakeEnv
 * in process. Random valid actions, the quickstart's env_config; prints mean and p99 of each and the load average.
 * Run: npx tsx bench/bridge_steps.ts [steps=1000]
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { startEnvServer } from '../infra/env_server';
import { ensureEnvVenv } from '../infra/env_venv';
import { FrozenLakeEnv, LAKE_ACTIONS } from '../src/envs/frozen_lake';
import { Rng } from '../src/util/rng';

const CONFIG = { size: 4, p: 0.8, is_slippery: false, format_penalty: -0.01 };
const TURN_CAP = 10; // the quickstart's custom_envs.FrozenLake.max_steps

function stats(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const mean = ms.reduce((s, x) => s + x, 0) / ms.length;
  const p99 = sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)];
  return `mean ${mean.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms over ${ms.length} steps`;
}

/** Episodes of random valid actions (seeded), cut at the turn cap, with at least `steps` steps in all as starpo plays them. */
function episodes(steps: number): Array<{ seed: number; answers: string[] }> {
  const out: Array<{ seed: number; answers: string[] }> = [];
  for (let total = 0, seed = 0; total < steps; seed++) {
    const rng = new Rng('bench/bridge_steps', seed);
    const answers = Array.from({ length: TURN_CAP }, () => LAKE_ACTIONS[rng.int(4)]);
    const env = new FrozenLakeEnv(CONFIG);
    env.reset(seed);
    let n = 0;
    while (n < answers.length && !env.step(`<answer>${answers[n]}</answer>`).terminated) n++;
    out.push({ seed, answers: answers.slice(0, Math.min(n + 1, answers.length)) });
    total += Math.min(n + 1, answers.length);
  }
  return out;
}

async function main(): Promise<void> {
  const steps = Number(process.argv[2] ?? 1000);
  const log = (line: string) => console.log(line);
  const python = await ensureEnvVenv({ log });
  const plan = episodes(steps);

  const builtin: number[] = [];
  for (const { seed, answers } of plan) {
    const env = new FrozenLakeEnv(CONFIG);
    env.reset(seed);
    for (const a of answers) {
      const t0 = process.hrtime.bigint();
      env.step(`<answer>${a}</answer>`);
      builtin.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }

  const server = await startEnvServer('gymnasium:FrozenLake-v1', { config: CONFIG });
  try {
    const load = loadavg().map((l) => l.toFixed(2));
    const r = spawnSync(python, [join(__dirname, '../test/fixtures/openenv/play_session.py'), server.url], {
      input: JSON.stringify(plan),
      encoding: 'utf8',
      maxBuffer: 1 << 28,
    });
    if (r.status !== 0) throw new Error(r.stderr);
    const played = JSON.parse(r.stdout) as Array<Array<{ seconds: number }>>;
    const remote = played.flatMap((e) => e.slice(1).map((s) => s.seconds * 1000));
    const resets = played.map((e) => e[0].seconds * 1000);
    console.log(`load average before the remote steps: ${load.join(' ')}`);
    console.log(`bridge FrozenLake step over WebSocket: ${stats(remote)}`);
    console.log(`bridge FrozenLake reset (new session): ${stats(resets).replace('steps', 'resets')}`);
    console.log(`built-in FrozenLakeEnv step in process: ${stats(builtin)}`);
  } finally {
    await server.stop();
  }
}

void main();
