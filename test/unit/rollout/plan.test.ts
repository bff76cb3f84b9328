/**
 * Group planning (docs/numerics.md §3): seeds are a pure function of (seed, split, step, group); validation
 * plays new states every evaluation unless val_env_manager.fixed_states; replacement groups;
 * shards count group_size + group_size_redundancy envs per group.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfigFile } from '../../../src/preflight/load';
import { envsPerGroup, generatingArgsOf, planShards, replacementGroup, withValEpisodes } from '../../../src/rollout/plan';
import { deriveSeed } from '../../../src/util/rng';

/** The tiny fixture (seed 7) with overrides; train 4 groups x 4, val 8 groups x 1. */
const fixture = (...overrides: string[]) => loadConfigFile('test/fixtures/tiny_frozen_lake.yaml', overrides).config;

test('train seeds: deriveSeed(seed, "train", step, g), new each step, equal within a group', () => {
  const config = fixture();
  const groups = planShards(config, 'train', 3).flat();
  assert.deepEqual(
    groups.map((g) => g.seed),
    [0, 1, 2, 3].map((g) => deriveSeed(7, 'train', 3, g)),
  );
  assert.deepEqual(groups[2], {
    tag: 'FrozenLake',
    groupId: 2,
    episode: 0,
    seed: deriveSeed(7, 'train', 3, 2),
    trajGroupId: `FrozenLake_2_0_${deriveSeed(7, 'train', 3, 2)}`,
    stream: [7, 'train', 3],
  });
  assert.notEqual(planShards(config, 'train', 4)[0][0].seed, groups[0].seed);
});

test('golden seeds of configs/frozen_lake.yaml (seed 42)', () => {
  const { config } = loadConfigFile('configs/frozen_lake.yaml');
  assert.equal(planShards(config, 'train', 3)[0][0].seed, 4060705113);
  assert.equal(planShards(config, 'val', 0)[0][0].seed, 2247529131, 'fixed_states: true in that file');
  assert.equal(planShards(config, 'val', 20)[0][0].seed, 2247529131);
});

test('validation: new states at every evaluation, identical across runs, own stream of the run seed', () => {
  const config = fixture();
  assert.equal(config.val_env_manager.fixed_states, false, 'docs/numerics.md §3 is the default');
  const at0 = planShards(config, 'val', 0).flat();
  const at2 = planShards(config, 'val', 2).flat();
  assert.deepEqual(
    at0.map((g) => g.seed),
    [...Array(8).keys()].map((g) => deriveSeed(7, 'val', 0, g)),
  );
  assert.deepEqual(
    at2.map((g) => g.seed),
    [...Array(8).keys()].map((g) => deriveSeed(7, 'val', 2, g)),
  );
  assert.equal(new Set([...at0, ...at2].map((g) => g.seed)).size, 16, 'no state repeats between evaluations');
  assert.deepEqual(planShards(fixture(), 'val', 2), planShards(config, 'val', 2), 'a second run plans the same');
  assert.deepEqual(at0[0].stream, [7, 'val', 0]);
  const trainSeeds = new Set(
    planShards(config, 'train', 0)
      .flat()
      .map((g) => g.seed),
  );
  assert.ok(
    at0.every((g) => !trainSeeds.has(g.seed)),
    "validation states differ from the same step's training states",
  );
});

test('val_env_manager.fixed_states: the same states and sampling streams at every evaluation', () => {
  const config = fixture('++val_env_manager.fixed_states=true');
  const at0 = planShards(config, 'val', 0);
  assert.deepEqual(planShards(config, 'val', 2), at0);
  assert.deepEqual(
    at0.flat().map((g) => g.seed),
    [...Array(8).keys()].map((g) => deriveSeed(7, 'val', g)),
  );
  assert.deepEqual(at0[0][0].stream, [7, 'val']);
});

test('fixed_states is for validation only', () => {
  assert.throws(
    () => fixture('++train_env_manager.fixed_states=true'),
    /`train_env_manager\.fixed_states` \(from `\+\+train_env_manager\.fixed_states=true` on the command line\): true is for validation only/,
  );
});

test('replacementGroup: same tag, id and episode; seed and stream derived from the failed group', () => {
  const [g] = planShards(fixture(), 'train', 3)[0];
  const r = replacementGroup(g);
  const seed = deriveSeed(g.seed, 'replace');
  assert.deepEqual(r, {
    tag: 'FrozenLake',
    groupId: 0,
    episode: 0,
    seed,
    trajGroupId: `FrozenLake_0_0_${seed}`,
    stream: [7, 'train', 3, 'replace'],
  });
  assert.deepEqual(replacementGroup(g), r, 'deterministic');
  assert.equal(replacementGroup(r).seed, deriveSeed(seed, 'replace'), 'a second replacement chains');
});

test('group_size_redundancy: shards hold max_env_num_per_worker / (group_size + redundancy) groups', () => {
  const config = fixture('train_env_manager.group_size_redundancy=4', 'train_env_manager.max_env_num_per_worker=16');
  assert.equal(envsPerGroup(config.train_env_manager), 8);
  assert.deepEqual(
    planShards(config, 'train', 0).map((s) => s.map((g) => g.groupId)),
    [
      [0, 1],
      [2, 3],
    ],
  );
  assert.throws(
    () => fixture('train_env_manager.group_size_redundancy=2'),
    /max_env_num_per_worker`: 8 must be 0 \(all in one worker\) or a multiple of group_size \+ group_size_redundancy \(6\)/,
  );
});

test("validation samples with its own generating_args merged over actor_infer's", () => {
  // The override merges into the fixture's val block (as in Hydra), which keeps its do_sample: false.
  const config = fixture('++val_env_manager.generating_args={temperature: 0.2, top_p: 0.9}');
  assert.deepEqual(generatingArgsOf(config, 'val'), {
    max_new_tokens: 24,
    temperature: 0.2,
    top_p: 0.9,
    top_k: 0,
    do_sample: false,
    num_beams: 1,
    num_return_sequences: 1,
  });
  assert.deepEqual(generatingArgsOf(config, 'train'), config.actor_infer.generating_args);
  assert.equal(generatingArgsOf(config, 'train').temperature, 1.0);
  assert.equal(generatingArgsOf(fixture(), 'val').do_sample, false, 'the fixture validates greedily');
});

test('withValEpisodes (starpo eval --episodes): val groups x group_size, the first groups unchanged', () => {
  const config = fixture('val_env_manager.group_size=2', 'val_env_manager.num_env_groups=4', 'val_env_manager.num_groups_partition=[4]');
  const more = withValEpisodes(config, 12);
  assert.equal(more.val_batch_size, 12);
  const groups = planShards(more, 'val', 2).flat();
  assert.equal(groups.length, 6, '12 episodes = 6 groups of 2');
  assert.deepEqual(groups.slice(0, 4), planShards(config, 'val', 2).flat(), 'the 4 groups of val_batch_size 8 come first');
  for (const bad of [0, 3, -2, 2.5]) {
    assert.throws(
      () => withValEpisodes(config, bad),
      (err: Error) =>
        err.name === 'ConfigError' &&
        err.message.includes(`--episodes: invalid config`) &&
        err.message.includes(`${bad} is not a positive multiple of val_env_manager.group_size (2)`),
    );
  }
});
