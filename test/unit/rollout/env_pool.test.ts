/**
 * The env pool (manager.ts runGroups): an env that throws (reset or step) or runs over its time budget fails
 * its whole group, which is replaced by a fresh group (new seed derived from the old one) up to
 * MAX_GROUP_ATTEMPTS plays, then dropped; the batch holds only complete groups and nothing throws.
 * group_size_redundancy keeps the first group_size finishers. Faults come from the `chaos` env. An env that
 * cannot be created is an EnvFailureError (not retried).
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RolloutGroup } from '../../../src/contract';
import { customEnvSchema, ENV_FAILURE, EnvFailureError, NON_RETRYABLE_ERROR_TYPES } from '../../../src/contract';
import { createEnv, ENV_TYPES, registerEnvType } from '../../../src/envs/registry';
import { charTokenizer } from '../../../src/model/tokenizer';
import { randomActionPolicy } from '../../../src/rollout/demonstrations';
import { MAX_GROUP_ATTEMPTS, type PoolOptions, playEpisodes, runGroups } from '../../../src/rollout/manager';
import { rolloutGroup } from '../../../src/rollout/plan';
import type { Policy } from '../../../src/rollout/policy';
import { deriveSeed } from '../../../src/util/rng';
import '../../helpers/chaos_env'; // registers env type chaos

const tokenizer = charTokenizer();
const LAKE = { size: 4, p: 0.8, is_slippery: false, format_penalty: -0.01 };
const envEntry = (env_type: string, env_config: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  customEnvSchema.parse({
    env_type,
    max_steps: 10,
    max_tokens_per_step: 24,
    agent_system_template: '',
    agent_template: '{observation}',
    env_config,
    ...extra,
  });
const chaos = (faults: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  envEntry('chaos', { inner_env_type: 'frozen_lake', inner_env_config: LAKE, ...faults }, extra);

/** Answers an invalid action: no episode terminates, every one runs to the 10-turn cap. */
const jump: Policy = {
  async generate(req) {
    const tokens = req.contexts.map((_, i) => tokenizer.encode('<answer>Jump</answer><|im_end|>').slice(0, req.maxNewTokens[i]));
    return { tokens, logprobs: tokens.map((t) => t.map(() => 0)) };
  },
};

const groups = (tag: string, n: number): RolloutGroup[] =>
  Array.from({ length: n }, (_, g) => rolloutGroup(tag, g, 0, deriveSeed(7, 'train', 0, g), [7, 'train', 0]));

function poolOptions(customEnvs: PoolOptions['customEnvs'], policy: Policy, groupSize: number, redundancy = 0): PoolOptions {
  return { policy, tokenizer, customEnvs, sequenceLength: 768, maxNewTokens: 24, split: 'train', step: 0, groupSize, redundancy };
}

const S0 = deriveSeed(7, 'train', 0, 0);

test('a batch of 64 where env 5 throws on step 3: it completes, the failure is counted, group 0 is replaced', async () => {
  const customEnvs = { Chaos: chaos({ throw_on_step: 3, env_ids: [5], seeds: [S0] }) };
  const out = await runGroups(groups('Chaos', 8), poolOptions(customEnvs, jump, 8));
  assert.deepEqual(out.stats, { failedEpisodes: 1, replacedGroups: 1, droppedGroups: 0 });
  assert.equal(out.errors.length, 1);
  assert.equal(out.errors[0], `Chaos env 5 (group 0, seed ${S0}): step 3 threw: chaos: injected failure in step 3 (env id 5, seed ${S0})`);
  assert.equal(out.trajectories.length, 64);
  const fresh = deriveSeed(S0, 'replace');
  const group0 = out.trajectories.slice(0, 8);
  assert.deepEqual(
    group0.map((t) => [t.envId, t.seed, t.trajGroupId]),
    [...Array(8).keys()].map((e) => [e, fresh, `Chaos_0_0_${fresh}`]),
  );
  assert.ok(
    out.trajectories.every((t) => t.turns.length === 10 && t.truncated),
    'every kept episode is whole',
  );
  // the other groups are exactly what a pool without faults plays
  const clean = await runGroups(groups('Chaos', 8), poolOptions({ Chaos: chaos({}) }, jump, 8));
  assert.deepEqual(out.trajectories.slice(8), clean.trajectories.slice(8));
});

test(`an env that always fails: its group is tried ${MAX_GROUP_ATTEMPTS} times, then dropped; the batch keeps only complete groups`, async () => {
  const customEnvs = { Chaos: chaos({ throw_on_step: 3, env_ids: [5] }) };
  const out = await runGroups(groups('Chaos', 8), poolOptions(customEnvs, jump, 8));
  assert.deepEqual(out.stats, { failedEpisodes: 3, replacedGroups: 2, droppedGroups: 1 });
  assert.equal(out.trajectories.length, 56);
  const sizes = new Map<string, number>();
  for (const t of out.trajectories) sizes.set(t.trajGroupId, (sizes.get(t.trajGroupId) ?? 0) + 1);
  assert.deepEqual([...sizes.values()], [8, 8, 8, 8, 8, 8, 8]);
  assert.ok(out.trajectories.every((t) => t.groupId !== 0));
  const seeds = [S0, deriveSeed(S0, 'replace'), deriveSeed(deriveSeed(S0, 'replace'), 'replace')];
  assert.deepEqual(
    out.errors.map((e) => /seed (\d+)\): step 3 threw/.exec(e)?.[1]),
    seeds.map(String),
  );
});

test('a throwing reset and a random policy: the group is replaced, the rest of the batch is untouched', async () => {
  const customEnvs = { Chaos: chaos({ throw_on_reset: true, env_ids: [2], seeds: [deriveSeed(7, 'train', 0, 1)] }) };
  const out = await runGroups(groups('Chaos', 4), poolOptions(customEnvs, randomActionPolicy(tokenizer), 2));
  assert.deepEqual(out.stats, { failedEpisodes: 1, replacedGroups: 1, droppedGroups: 0 });
  assert.match(out.errors[0], /^Chaos env 2 \(group 1, seed \d+\): reset threw: chaos: injected failure in reset/);
  assert.deepEqual(
    out.trajectories.map((t) => t.envId),
    [0, 1, 2, 3, 4, 5, 6, 7],
  );
  assert.ok(out.trajectories.every((t) => t.turns.length >= 1));
});

test('an episode over episode_timeout_seconds fails like a throw (measured after the blocking step)', async () => {
  const customEnvs = { Chaos: chaos({ hang_on_step: 2, hang_seconds: 0.3, env_ids: [1], seeds: [S0] }, { episode_timeout_seconds: 0.2 }) };
  const started = performance.now();
  const out = await runGroups(groups('Chaos', 2), poolOptions(customEnvs, jump, 2));
  assert.ok(performance.now() - started >= 300, 'the hang really blocked');
  assert.deepEqual(out.stats, { failedEpisodes: 1, replacedGroups: 1, droppedGroups: 0 });
  assert.match(
    out.errors[0],
    /^Chaos env 1 \(group 0, seed \d+\): step 2 brought the episode's env time to 0\.3\d s, over custom_envs\.Chaos\.episode_timeout_seconds = 0\.2$/,
  );
  assert.equal(out.trajectories.length, 4);
});

test('group_size_redundancy: ties at the turn cap keep the lowest env ids of each group', async () => {
  const customEnvs = { Lake: envEntry('frozen_lake', LAKE) };
  const out = await runGroups(groups('Lake', 2), poolOptions(customEnvs, jump, 4, 2));
  assert.deepEqual(
    out.trajectories.map((t) => t.envId),
    [0, 1, 2, 3, 6, 7, 8, 9],
  );
  assert.deepEqual(out.stats, { failedEpisodes: 0, replacedGroups: 0, droppedGroups: 0 });
});

test('group_size_redundancy: the first group_size finishers (fewest turns, ties by env id), stragglers stopped', async () => {
  const customEnvs = { Lake: envEntry('frozen_lake', LAKE) };
  const policy = randomActionPolicy(tokenizer);
  const [g0, g1] = groups('Lake', 2);
  const specs = [g0, g1].flatMap((g) =>
    [...Array(6).keys()].map((j) => {
      const envId = g.groupId * 6 + j;
      return { tag: 'Lake', groupId: g.groupId, envId, seed: g.seed, trajGroupId: g.trajGroupId, rngParts: [...g.stream, envId] };
    }),
  );
  // the same 12 envs played to the end: the lockstep turn in which each episode ends
  const all = await playEpisodes(specs, poolOptions(customEnvs, policy, 4, 2));
  assert.deepEqual(
    all.map((o) => o.endedAt),
    [1, 1, 9, 9, 5, 1, /* group 1 */ 4, 4, 2, 1, 2, 1],
  );
  // so group 0 keeps envs 0, 1, 5 (turn 1) and 4 (turn 5); group 1 keeps 9, 11 (turn 1) and 8, 10 (turn 2)
  const out = await runGroups([g0, g1], poolOptions(customEnvs, policy, 4, 2));
  assert.deepEqual(
    out.trajectories.map((t) => t.envId),
    [0, 1, 4, 5, 8, 9, 10, 11],
  );
  assert.deepEqual(
    out.trajectories,
    [0, 1, 4, 5, 8, 9, 10, 11].map((e) => all[e].trajectory),
    'kept episodes are played as without redundancy',
  );
  // the stragglers stop as soon as their group has 4 finishers
  const cut = await playEpisodes(specs, poolOptions(customEnvs, policy, 4, 2), 4);
  assert.deepEqual(
    cut.map((o) => `${o.status}@${o.endedAt}`),
    [
      'finished@1',
      'finished@1',
      'cut@5',
      'cut@5',
      'finished@5',
      'finished@1',
      'cut@2',
      'cut@2',
      'finished@2',
      'finished@1',
      'finished@2',
      'finished@1',
    ],
  );
});

test('an env that cannot be created at play time (only with an env id) is an EnvFailureError naming tag, env, group and seed', async () => {
  // config validation creates envs without an id, so this one passes `config check` and fails only in the pool
  if (!ENV_TYPES.includes('unbuildable')) {
    registerEnvType('unbuildable', (_config, options) => {
      if (options.envId !== undefined) throw new Error('no such device');
      return createEnv('frozen_lake', LAKE);
    });
  }
  await assert.rejects(
    runGroups(groups('Broken', 2), poolOptions({ Broken: envEntry('unbuildable', {}) }, jump, 2)),
    (err: Error) =>
      err instanceof EnvFailureError &&
      err.name === ENV_FAILURE &&
      NON_RETRYABLE_ERROR_TYPES.includes(err.name) &&
      err.message === `Broken env 0 (group 0, seed ${S0}) could not be created: no such device`,
  );
});
