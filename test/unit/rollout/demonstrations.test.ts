/**
 * `warmup: solver`: demonstrations whose actions come from Env.solve (BFS), for a
 * warmup.solver_fraction of the episodes (the rest random valid actions); a config check that every
 * train tag's env has a solver.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { customEnvSchema, type Trajectory } from '../../../src/contract';
import { createEnv } from '../../../src/envs/registry';
import { charTokenizer } from '../../../src/model/tokenizer';
import { loadConfigFile } from '../../../src/preflight/load';
import {
  formatDemonstrations,
  randomActionPolicy,
  solverEpisodes,
  solverPolicy,
  warmupDemonstrations,
} from '../../../src/rollout/demonstrations';
import { type EpisodeSpec, runEpisodes } from '../../../src/rollout/manager';
import { startOpenEnvServer } from '../../helpers/openenv_server';

const tokenizer = charTokenizer();
const LAKE = { size: 4, p: 0.8, is_slippery: false, format_penalty: -0.01 };
const lakeEntry = (envConfig: Record<string, unknown> = {}) =>
  customEnvSchema.parse({
    env_type: 'frozen_lake',
    max_steps: 10,
    max_tokens_per_step: 40,
    agent_system_template: '',
    agent_template: '{observation}',
    env_config: { ...LAKE, ...envConfig },
  });
const specs = (tag: string, n: number): EpisodeSpec[] =>
  Array.from({ length: n }, (_, i) => ({
    tag,
    groupId: i,
    envId: i,
    seed: 1000 + i,
    trajGroupId: `${tag}_${i}_0_${1000 + i}`,
    rngParts: [3, i],
  }));
const opts = { tokenizer, sequenceLength: 2000, maxNewTokens: 40, split: 'train' as const, step: 0 };

test('the solver policy wins every FrozenLake episode along a shortest path', async () => {
  const trajs = await runEpisodes(specs('Lake', 64), { ...opts, customEnvs: { Lake: lakeEntry() }, policy: solverPolicy(tokenizer) });
  for (const t of trajs) {
    const env = createEnv('frozen_lake', LAKE);
    env.reset(t.seed);
    const shortest = env.solve!()!;
    assert.equal(t.success, true, `seed ${t.seed}`);
    assert.equal(t.episodeScore, 1);
    assert.deepEqual(
      t.turns.map((u) => u.action),
      shortest,
      `seed ${t.seed}: the BFS plan, replanned each turn`,
    );
    assert.ok(t.turns.every((u) => u.response === `<answer>${u.action}</answer><|im_end|>`));
  }
});

/** Per turn of a trajectory, whether its response tokens carry response mask 1 (all of them) or 0 (all). */
function learnedTurns(t: Trajectory): boolean[] {
  let cursor = 0;
  return t.turns.map((u) => {
    const ids = tokenizer.encode(u.response);
    while (ids.some((id, j) => t.inputIds[cursor + j] !== id)) cursor++;
    const mask = t.responseMask.slice(cursor, cursor + ids.length);
    cursor += ids.length;
    assert.ok(mask.every((m) => m === mask[0]));
    return mask[0] === 1;
  });
}

test('solver noise: a random move with that probability per turn, packed as context; the plan from where the episode is', async () => {
  const noisy = await runEpisodes(specs('Lake', 64), { ...opts, customEnvs: { Lake: lakeEntry() }, policy: solverPolicy(tokenizer, 0.3) });
  let noise = 0;
  let turns = 0;
  for (const t of noisy) {
    const env = createEnv('frozen_lake', LAKE);
    env.reset(t.seed);
    const learned = learnedTurns(t);
    t.turns.forEach((u, i) => {
      turns++;
      if (learned[i]) assert.equal(u.action, env.solve!()![0], `seed ${t.seed} turn ${i}: a learned move is the plan's`);
      else noise++;
      env.step(`<answer>${u.action}</answer>`);
    });
  }
  assert.ok(noise > 0.2 * turns && noise < 0.4 * turns, `${noise} of ${turns} turns are noise moves`);
  assert.ok(
    noisy.some((t) => !t.success),
    'a random move can end in a hole',
  );
  const again = await runEpisodes(specs('Lake', 64), { ...opts, customEnvs: { Lake: lakeEntry() }, policy: solverPolicy(tokenizer, 0.3) });
  assert.deepEqual(again, noisy, "the noise comes from each row's seeded stream");
  const clean = await runEpisodes(specs('Lake', 8), { ...opts, customEnvs: { Lake: lakeEntry() }, policy: solverPolicy(tokenizer) });
  assert.ok(
    clean.every((t) => learnedTurns(t).every(Boolean)),
    'without noise every move is learned',
  );
});

test('for a think-pattern tag the solver answers <think></think><answer>..</answer>', async () => {
  const Think = lakeEntry({ action_pattern: '<think>(.*?)</think>\\s*<answer>(.*?)</answer>' });
  const trajs = await runEpisodes(specs('Think', 8), { ...opts, customEnvs: { Think }, policy: solverPolicy(tokenizer) });
  assert.ok(trajs.every((t) => t.success && t.turns.every((u) => u.response.startsWith('<think></think><answer>'))));
});

test('solverEpisodes: round(fraction * n) seeded indices', () => {
  assert.deepEqual(solverEpisodes(16, 0.5, 7), [0, 4, 5, 6, 7, 9, 13, 14]);
  assert.deepEqual(solverEpisodes(16, 0.25, 7), [6, 7, 9, 13]);
  assert.deepEqual(solverEpisodes(16, 1, 7), [...Array(16).keys()]);
  assert.deepEqual(solverEpisodes(16, 0, 7), []);
});

test('warmup solver demonstrations: every solver episode succeeds; the others are the format episodes', async () => {
  const fixture = (...o: string[]) => loadConfigFile('test/fixtures/tiny_frozen_lake.yaml', ['warmup.num_episodes=16', ...o]).config;
  const all = (await warmupDemonstrations(fixture('warmup.type=solver'), tokenizer)).episodes;
  assert.deepEqual(
    all.map((t) => t.groupId),
    [...Array(16).keys()],
  );
  assert.ok(
    all.every((t) => t.success),
    'solver_fraction 1 (default): every demonstration wins',
  );
  const half = (await warmupDemonstrations(fixture('warmup.type=solver', '++warmup.solver_fraction=0.5'), tokenizer)).episodes;
  const format = await formatDemonstrations(fixture(), tokenizer);
  const solverIds = [0, 4, 5, 6, 7, 9, 13, 14]; // solverEpisodes(16, 0.5, seed 7)
  assert.ok(solverIds.every((i) => half[i].success));
  for (let i = 0; i < 16; i++) {
    if (solverIds.includes(i)) assert.deepEqual(half[i], all[i]);
    else assert.deepEqual(half[i], format[i], `episode ${i} plays random valid actions`);
  }
  assert.ok(format.filter((t) => t.success).length < 16, 'random actions do not always win');
});

test('warmup.type solver with an env that has no solve() is a config error naming the tag', () => {
  assert.throws(
    () => loadConfigFile('configs/bandit.yaml', ['warmup.type=solver']),
    /`warmup\.type` \(from `warmup\.type=solver` on the command line\): solver needs a solver for every train tag, but tag "Bandit" \(env_type bandit\) has no solve\(\)/,
  );
  assert.equal(loadConfigFile('test/fixtures/tiny_frozen_lake.yaml', ['warmup.type=solver']).config.warmup.solver_fraction, 1);
});

test("free-form answers (Countdown, no action names): the format policy answers the solver's expression", async () => {
  const Countdown = customEnvSchema.parse({
    env_type: 'countdown',
    max_steps: 1,
    max_tokens_per_step: 40,
    agent_system_template: '',
    agent_template: '{observation}',
  });
  const trajs = await runEpisodes(specs('Countdown', 8), { ...opts, customEnvs: { Countdown }, policy: randomActionPolicy(tokenizer) });
  assert.ok(
    trajs.every((t) => t.success && /^<answer>[\d+\-() ]+<\/answer><\|im_end\|>$/.test(t.turns[0].response)),
    trajs[0].turns[0].response,
  );
});

test('demonstrations play at most max_env_num_per_worker episodes at once (a remote env holds a session each), the same episodes as all at once', async () => {
  const server = await startOpenEnvServer();
  const remoteRun = (atOnce: number) =>
    loadConfigFile('test/fixtures/tiny_frozen_lake.yaml', [
      'warmup.type=solver',
      'warmup.num_episodes=24',
      'train_env_manager.tags=[Remote]',
      'val_env_manager.tags=[Remote]',
      `train_env_manager.max_env_num_per_worker=${atOnce}`,
      `+custom_envs.Remote={env_type: openenv, max_steps: 3, max_tokens_per_step: 24, agent_system_template: "", agent_template: "{observation}", env_config: {url: "${server.url}", plan_field: plan}}`,
    ]).config;
  try {
    const bounded = await warmupDemonstrations(remoteRun(4), tokenizer);
    assert.equal(server.maxPlaying(), 4);
    assert.deepEqual(bounded.errors, []);
    assert.equal(bounded.episodes.length, 24);
    assert.ok(bounded.episodes.every((t) => t.success));
    const together = await warmupDemonstrations(remoteRun(0), tokenizer);
    assert.equal(server.maxPlaying(), 24, 'max_env_num_per_worker 0: all in one go');
    assert.deepEqual(together, bounded);
  } finally {
    await server.stop();
  }
});
