/**
 * Bench: the per-call cost of an env on an OpenEnv server (the `openenv` env type: one WebSocket session per
 * episode) against the built-in FrozenLake, both played with random FrozenLake actions (seeded). Prints ms per
 * reset and per step, mean and p99. Without a URL it serves the tests' OpenEnv server in this process (the
 * protocol's own cost); with one it plays that server (e.g. the bridge's FrozenLake).
 * Run: npx tsx bench/openenv_steps.ts [url] [episodes=200]
 */
import { loadavg } from 'node:os';
import type { Env } from '../src/envs/env';
import { createEnv } from '../src/envs/registry';
import { Rng } from '../src/util/rng';
import { startOpenEnvServer } from '../test/helpers/openenv_server';

const ACTIONS = ['Left', 'Down', 'Right', 'Up'];

function summary(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
  const p99 = sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))];
  return `mean ${mean.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms (${ms.length} calls)`;
}

/** Plays `episodes` episodes (seeds 0..) of at most 10 steps; returns the ms of each reset and each step. */
async function play(env: Env, episodes: number): Promise<{ resets: number[]; steps: number[] }> {
  const rng = new Rng('bench/openenv_steps');
  const resets: number[] = [];
  const steps: number[] = [];
  for (let seed = 0; seed < episodes; seed++) {
    let t = performance.now();
    await env.reset(seed);
    resets.push(performance.now() - t);
    for (let k = 0, done = false; k < 10 && !done; k++) {
      t = performance.now();
      done = (await env.step(`<answer>${ACTIONS[rng.int(4)]}</answer><|im_end|>`)).terminated;
      steps.push(performance.now() - t);
    }
  }
  env.close?.();
  return { resets, steps };
}

async function main(): Promise<void> {
  const episodes = Number(process.argv[3] ?? 200);
  const local = process.argv[2] === undefined ? await startOpenEnvServer() : null;
  const url = process.argv[2] ?? local!.url;
  console.log(`${episodes} episodes of at most 10 steps, random FrozenLake actions; load ${loadavg()[0].toFixed(2)}`);
  const builtIn = await play(createEnv('frozen_lake', { is_slippery: false }), episodes);
  console.log(`frozen_lake (in process): reset ${summary(builtIn.resets)}; step ${summary(builtIn.steps)}`);
  const remote = await play(createEnv('openenv', { url, action: 'answer' }), episodes);
  console.log(
    `openenv at ${url}${local ? " (the tests' server, this process)" : ''}: reset ${summary(remote.resets)}; step ${summary(remote.steps)}`,
  );
  await local?.stop();
}

void main();
