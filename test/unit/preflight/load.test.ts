import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { ConfigError } from '../../../src/contract';
import { loadConfigFile, validateConfig } from '../../../src/preflight/load';
import { planShards } from '../../../src/rollout/plan';
import { configErrorOf } from '../../helpers/config_error';

const base = () => parse(readFileSync('configs/frozen_lake.yaml', 'utf8')) as Record<string, any>;

function problemsOf(raw: unknown): string[] {
  try {
    validateConfig(raw, 'test.yaml');
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.problems;
  }
  assert.fail('expected a ConfigError');
}

test('the shipped configs load with defaults applied', () => {
  for (const file of ['configs/frozen_lake.yaml', 'configs/bandit.yaml']) {
    const { config } = loadConfigFile(file);
    assert.equal(config.actor_train.training_args.adam_beta2, 0.999);
    assert.equal(config.rollout_batch_size % config.train_env_manager.group_size, 0);
  }
  const { config } = loadConfigFile('configs/frozen_lake.yaml');
  assert.equal(config.reward_normalization.method, 'mean_std');
  assert.equal(config.custom_envs.FrozenLake.max_steps, 10);
});

test('unknown key names the key and the nearest known one', () => {
  const raw = base();
  raw.rollout_batch_sise = 64;
  const [p] = problemsOf(raw);
  assert.match(p, /unknown key `rollout_batch_sise`; did you mean `rollout_batch_size`\?/);
  const nested = base();
  nested.actor_train.training_args.learnig_rate = 1;
  assert.match(problemsOf(nested)[0], /actor_train\.training_args\.learnig_rate`; did you mean `learning_rate`/);
});

test('wrong type names the key and the value', () => {
  const raw = base();
  raw.max_steps = 'ten';
  assert.match(problemsOf(raw)[0], /`max_steps`: .*expected number.*\(got "ten"\)/);
  const enumBad = base();
  enumBad.reward_normalization.method = 'zscore';
  assert.match(problemsOf(enumBad)[0], /`reward_normalization\.method`: .*"identity".*\(got "zscore"\)/);
});

test('rollout_batch_size must be a multiple of group_size', () => {
  const raw = base();
  raw.rollout_batch_size = 60;
  const problems = problemsOf(raw);
  assert.ok(
    problems.some((p) => /`rollout_batch_size`: 60 is not a multiple of train_env_manager\.group_size \(8\)/.test(p)),
    problems.join('\n'),
  );
});

test('a batch size past the cap is refused before any group is planned', () => {
  const raw = base();
  raw.rollout_batch_size = 1e9;
  raw.val_batch_size = 2 ** 17;
  const problems = problemsOf(raw).join('\n');
  assert.match(problems, /`rollout_batch_size`: .*<=65536 \(got 1000000000\)/);
  assert.match(problems, /`val_batch_size`: .*<=65536 \(got 131072\)/);
});

/** The ConfigError message of loading a config file with these overrides. */
function loadErrorOf(file: string, overrides: string[]): string {
  try {
    loadConfigFile(file, overrides);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.message;
  }
  assert.fail('expected a ConfigError');
}

const blame = (overrides: string[]) => loadErrorOf('configs/frozen_lake.yaml', overrides);

test('a cross-key problem names the command-line argument that set its key', () => {
  const batch = blame(['rollout_batch_size=60']);
  assert.match(batch, /^configs\/frozen_lake\.yaml: invalid config/, 'the minibatch rule also involves keys of the file');
  assert.match(batch, /`rollout_batch_size` \(from `rollout_batch_size=60` on the command line\): 60 is not a multiple/);
  assert.match(
    blame(['sequence_length=10']),
    /^command line: invalid config\n {2}- `sequence_length` \(from `sequence_length=10` on the command line\): 10 leaves no room/,
  );
});

test('an inherited name as a key is an unknown key, with no built-in offered as the nearest', () => {
  const message = blame(['constructor=1']);
  assert.match(message, /unknown key `constructor` \(from `constructor=1` on the command line\) \(allowed at the top level: /);
  assert.doesNotMatch(message, /did you mean|native code/);
});

test('inherited names written as top-level keys of a file are unknown keys, not unused variables of the defaults file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-inherited-'));
  const file = join(dir, 'main.yaml');
  writeFileSync(file, `defaults:\n  - ${resolve('configs/frozen_lake')}\nconstructor: 1\ntoString: x\n`);
  const err = configErrorOf(() => loadConfigFile(file));
  assert.deepEqual(
    err.problems.map((p) => /unknown key `(\w+)`/.exec(p)?.[1]),
    ['constructor', 'toString'],
  );
});

test('a problem that a ~key deletion caused names the deletion', () => {
  const err = configErrorOf(() => loadConfigFile('configs/sokoban_solver.yaml', ['~custom_envs.SimpleSokoban.env_config.dim_y']));
  assert.match(
    err.message,
    /^command line: invalid config\n {2}- `custom_envs\.SimpleSokoban\.env_config` \(from `~custom_envs\.SimpleSokoban\.env_config\.dim_y` on the command line\): .*dim_y \(missing\)/,
  );
});

test('a long override argument is clipped where a problem names it', () => {
  const message = blame([`seed=${'x'.repeat(5000)}`]);
  assert.ok(message.length < 600, `${message.length} characters`);
  assert.match(message, /\(from `seed=x{115}\.\.\. \(5,005 characters\)` on the command line\)/);
});

test('a misspelled env tag in an override is named with the tag it is close to', () => {
  const message = blame(['custom_envs.FrozenLak.env_config.size=4']);
  assert.match(message, /^command line: invalid config/);
  assert.match(
    message,
    /`custom_envs\.FrozenLak\.env_type` is required \(a string\); `custom_envs\.FrozenLak` \(from `custom_envs\.FrozenLak\.env_config\.size=4` on the command line\) is a new entry: did you mean `custom_envs\.FrozenLake`\?/,
  );
});

test('an env_config problem names the env_config key and the argument that set it', () => {
  const message = blame(['custom_envs.FrozenLake.env_config.observation_format=bogus']);
  assert.match(
    message,
    /^command line: invalid config\n {2}- `custom_envs\.FrozenLake\.env_config\.observation_format` \(from `custom_envs\.FrozenLake\.env_config\.observation_format=bogus` on the command line\): env_config of frozen_lake: observation_format must be one of "grid", /,
  );
  const template = blame(["custom_envs.FrozenLake.agent_template='{observatoin}'"]);
  assert.match(
    template,
    /`custom_envs\.FrozenLake\.agent_template` \(from .* on the command line\): unknown placeholder \{observatoin\}; did you mean \{observation\}\? \(allowed: \{turn_idx\}, \{observation\}/,
  );
  // Two keys in conflict: the problem names the env_config block, not one of them (the message names both).
  const conflict = loadErrorOf('configs/bandit.yaml', ['custom_envs.Bandit.env_config.lo_arm_name=dragon']);
  assert.match(conflict, /- `custom_envs\.Bandit\.env_config`: env_config of bandit: hi_arm_name must differ .* from lo_arm_name/);
});

test('partition, tags and env_type are checked', () => {
  const raw = base();
  raw.train_env_manager.num_groups_partition = [7];
  raw.custom_envs.FrozenLake.env_type = 'frozenlake';
  raw.val_env_manager.tags = ['Sokoban'];
  const problems = problemsOf(raw).join('\n');
  assert.match(problems, /num_groups_partition`: \[7\] sums to 7; it must sum to num_env_groups \(8\)/);
  assert.match(problems, /env_type`: "frozenlake" is not a known env type \(allowed: frozen_lake, bandit, [a-z_, ]+\)/);
  assert.match(problems, /tag "Sokoban" has no entry in custom_envs/);
});

test('ROLL keys for GPU placement are accepted and listed as ignored', () => {
  const raw = base();
  raw.num_gpus_per_node = 8;
  raw.actor_train.device_mapping = 'list(range(0,8))';
  const config = validateConfig(raw);
  assert.equal(config.max_steps, 30);
});

test('planShards: complete groups, equal seeds within a group, fixed validation states', () => {
  const { config } = loadConfigFile('configs/frozen_lake.yaml');
  const shards = planShards(config, 'train', 3);
  assert.equal(shards.length, 2);
  const groups = shards.flat();
  assert.equal(groups.length, 8);
  assert.deepEqual(
    groups.map((g) => g.groupId),
    [0, 1, 2, 3, 4, 5, 6, 7],
  );
  assert.equal(new Set(groups.map((g) => g.seed)).size, 8);
  assert.deepEqual(planShards(config, 'train', 3), shards);
  assert.notDeepEqual(planShards(config, 'train', 4)[0][0].seed, groups[0].seed);
  assert.deepEqual(planShards(config, 'val', 0), planShards(config, 'val', 20));
  assert.equal(groups[2].trajGroupId, `FrozenLake_2_0_${groups[2].seed}`);
});
