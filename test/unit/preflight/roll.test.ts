/**
 * ROLL configs as ROLL ships them (test/fixtures/roll/: its traj_envs.yaml and agent_val_frozen_lake.yaml,
 * unchanged), user helper variables, ROLL's current reward_normalization keys and training_args defaults,
 * and the warning for groups of one.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { configWarnings } from '../../../src/config/warnings';
import { acceptedNotes, loadConfigFile, validateConfig } from '../../../src/preflight/load';
import { configErrorOf } from '../../helpers/config_error';

const ROLL_EXAMPLE = 'test/fixtures/roll/qwen2.5-0.5B-agentic/agent_val_frozen_lake.yaml';
const ROLL_TRAJ_ENVS = 'test/fixtures/roll/config/traj_envs.yaml';
/** The tiny model instead of ROLL's Hub id, and a context it has. */
const ON_TINY = ['pretrain=tiny', 'sequence_length=2048'];

/** Writes `text` as main.yaml in a fresh temp dir; returns its path. */
function mainFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'starpo-roll-')), 'main.yaml');
  writeFileSync(file, text);
  return file;
}

/** configs/frozen_lake.yaml as a mapping, with `patch`'s top-level keys replacing its own. */
function quickstart(patch: Record<string, unknown> = {}): Record<string, any> {
  return { ...(parse(readFileSync('configs/frozen_lake.yaml', 'utf8')) as Record<string, unknown>), ...patch };
}

test("ROLL's own agent_val_frozen_lake.yaml with its traj_envs.yaml loads: helper keys are variables, used or not", () => {
  const loaded = loadConfigFile(ROLL_EXAMPLE, ON_TINY);
  assert.deepEqual(Object.keys(loaded.config.custom_envs), [
    'SimpleSokoban',
    'LargerSokoban',
    'SokobanDifferentGridVocab',
    'FrozenLake',
    'FrozenLakeThink',
    'FrozenLakeLocallyDefineExamples',
  ]);
  assert.equal(loaded.config.custom_envs.SimpleSokoban.env_config.format_penalty, -0.15, '${sokoban_format_penalty}');
  assert.equal(loaded.config.custom_envs.FrozenLake.max_tokens_per_step, 64, 'the top-level override reaches the env');
  assert.deepEqual(loaded.variables, [
    {
      file: ROLL_TRAJ_ENVS,
      keys: [
        'action_pattern',
        'think_action_pattern',
        'max_tokens_per_step',
        'max_actions_per_traj',
        'sokoban_format_penalty',
        'frozen_format_penalty',
        'env_manager_cls',
        'agent_runner_cls',
        'custom_env',
        'agent_system_template',
        'agent_template',
      ],
    },
  ]);
  assert.deepEqual(loaded.unused, [
    { file: ROLL_TRAJ_ENVS, keys: ['all_response_pattern', 'single_prompt_agent_system_template', 'single_prompt_agent_template'] },
  ]);
  assert.ok(loaded.ignored.includes('custom_envs.FrozenLake.agent_runner_cls'), loaded.ignored.join(', '));
  // validation groups of one are not normalised: the one warning is ROLL's exp_name, which starpo does not use
  assert.deepEqual(loaded.warnings, [
    '`exp_name` ("agentic_pipeline") is ignored: a run is named by its run id (`--run-id`, default <config name>-<time>)',
  ]);
  const notes = acceptedNotes(loaded);
  assert.equal(
    notes[notes.length - 1],
    `unused variables from ${ROLL_TRAJ_ENVS} (nothing refers to them): all_response_pattern, single_prompt_agent_system_template, single_prompt_agent_template`,
  );
  // ROLL's file as is: the Hub id is the one problem (starpo downloads nothing).
  const asIs = configErrorOf(() => loadConfigFile(ROLL_EXAMPLE));
  assert.equal(asIs.problems.length, 1, asIs.message);
  assert.match(asIs.problems[0], /^`pretrain`: .*\/Qwen\/Qwen2\.5-0\.5B-Instruct is not a folder; /);
});

test("a user's helper variable referenced by an env is accepted and listed; an unreferenced unknown key stays an error", () => {
  const helper = mainFile(
    `defaults:\n  - ${resolve(ROLL_EXAMPLE)}\nthink_answer_pattern: <think>(.*?)</think><answer>(.*?)</answer>\n` +
      'custom_env:\n  FrozenLakeThink:\n    env_config:\n      action_pattern: ${think_answer_pattern}\n',
  );
  const loaded = loadConfigFile(helper, ON_TINY);
  assert.equal(loaded.config.custom_envs.FrozenLakeThink.env_config.action_pattern, '<think>(.*?)</think><answer>(.*?)</answer>');
  assert.deepEqual(
    loaded.variables.find((v) => v.file === helper),
    { file: helper, keys: ['think_answer_pattern'] },
  );
  const typo = mainFile(`defaults:\n  - ${resolve(ROLL_EXAMPLE)}\nthink_answer_pattern: x\nrollout_batch_sise: 64\n`);
  const err = configErrorOf(() => loadConfigFile(typo, ON_TINY));
  assert.deepEqual(
    err.problems.map((p) => p.replace(/ \(allowed at the top level: .*\)$/, '')),
    ['unknown key `think_answer_pattern`', 'unknown key `rollout_batch_sise`; did you mean `rollout_batch_size`?'],
  );
  // In an included file, an unreferenced near miss of a config key is a typo, not a helper.
  const shared = mainFile(`defaults:\n  - ${resolve(ROLL_EXAMPLE)}\nval_batch_sise: 64\n`);
  const included = mainFile(`defaults:\n  - ${shared}\n`);
  assert.match(
    configErrorOf(() => loadConfigFile(included, ON_TINY)).problems[0],
    /^unknown key `val_batch_sise` \(from .*\); did you mean `val_batch_size`\?/,
  );
});

test('reward_normalization: norm_mean_type / norm_std_type win, the deprecated method fills the ones left null (ROLL)', () => {
  const norm = (rn: Record<string, unknown>) => validateConfig(quickstart({ reward_normalization: rn })).reward_normalization;
  assert.deepEqual(norm({}), { grouping: 'batch', method: 'identity', norm_mean_type: null, norm_std_type: null });
  assert.deepEqual(norm({ grouping: 'batch', method: 'mean_std' }), {
    grouping: 'batch',
    method: 'mean_std',
    norm_mean_type: 'batch',
    norm_std_type: 'batch',
  });
  assert.deepEqual(norm({ grouping: 'traj_group_id', method: 'mean_std', norm_mean_type: 'batch' }), {
    grouping: 'traj_group_id',
    method: 'mean_std',
    norm_mean_type: 'batch',
    norm_std_type: 'group',
  });
  assert.deepEqual(norm({ grouping: 'traj_group_id', norm_mean_type: 'group', norm_std_type: 'batch' }), {
    grouping: 'traj_group_id',
    method: 'identity',
    norm_mean_type: 'group',
    norm_std_type: 'batch',
  });
  // ROLL defines global_scale_factor / global_shift_value but never applies them.
  const loaded = loadConfigFile('configs/frozen_lake.yaml', ['+reward_normalization.global_scale_factor=2']);
  assert.deepEqual(loaded.ignored, ['reward_normalization.global_scale_factor']);
  const bad = configErrorOf(() => validateConfig(quickstart({ reward_normalization: { norm_std_type: 'rows' } }), 'test.yaml'));
  assert.deepEqual(bad.problems, ['`reward_normalization.norm_std_type`: expected one of "batch"|"group" or null (got "rows")']);
});

test("ROLL's top-level norm_mean_type / norm_std_type (its RLVR spelling) point to reward_normalization", () => {
  const bad = configErrorOf(() => validateConfig(quickstart({ norm_mean_type: 'group' })));
  assert.match(bad.problems[0] ?? '', /^unknown key `norm_mean_type`; did you mean `reward_normalization\.norm_mean_type`\?/);
});

test("gradient_accumulation_steps defaults to 1 as in ROLL's TrainingArguments; the shipped configs keep their minibatches", () => {
  const raw = quickstart({
    rollout_batch_size: 16,
    train_env_manager: { ...quickstart().train_env_manager, num_env_groups: 2, num_groups_partition: [2] },
  });
  delete raw.actor_train.training_args.per_device_train_batch_size;
  delete raw.actor_train.training_args.gradient_accumulation_steps;
  const args = validateConfig(raw).actor_train.training_args;
  assert.deepEqual([args.per_device_train_batch_size, args.gradient_accumulation_steps], [8, 1]);
  const minibatch = (file: string) => {
    const a = loadConfigFile(file).config.actor_train.training_args;
    return [a.per_device_train_batch_size, a.gradient_accumulation_steps];
  };
  assert.deepEqual(minibatch('configs/frozen_lake.yaml'), [8, 8]);
  assert.deepEqual(minibatch('configs/frozen_lake_solver.yaml'), [8, 8]);
  assert.deepEqual(minibatch('configs/grpo_kl_frozen_lake.yaml'), [8, 8]);
  assert.deepEqual(minibatch('configs/sokoban_solver.yaml'), [8, 8]);
  assert.deepEqual(minibatch('configs/mixed_frozen_lake_sokoban.yaml'), [8, 8]);
  assert.deepEqual(minibatch('configs/starpo_s_frozen_lake.yaml'), [8, 2]);
  assert.deepEqual(minibatch('configs/bandit.yaml'), [32, 8]);
  assert.deepEqual(minibatch('configs/examples/agent_val_frozen_lake.yaml'), [8, 4]);
});

test('groups of one under a group-wise normalisation warn (every advantage is 0), otherwise not', () => {
  const singles = { ...quickstart().train_env_manager, group_size: 1 };
  // exp_name: starpo, so the only warnings are those of the normalisation (exp_name has its own test)
  const warn = (patch: Record<string, unknown>) =>
    configWarnings(validateConfig(quickstart({ train_env_manager: singles, exp_name: 'starpo', ...patch })));
  const [line] = warn({ reward_normalization: { grouping: 'traj_group_id', method: 'mean' } });
  assert.equal(
    line,
    'train_env_manager.group_size 1 with reward_normalization.grouping traj_group_id puts each trajectory in a group of its own, ' +
      'and reward_normalization norm_mean_type group then makes every normalised score and every advantage 0 (nothing is learnt); ' +
      'use train_env_manager.group_size >= 2, grouping batch or tags, or no group statistics (reward_normalization.method identity, or method mean with norm_mean_type batch)',
  );
  // the remedies the line names silence it
  assert.deepEqual(warn({ reward_normalization: { grouping: 'traj_group_id', method: 'mean', norm_mean_type: 'batch' } }), []);
  assert.deepEqual(warn({ reward_normalization: { grouping: 'tags', method: 'mean' } }), []);
  assert.match(
    warn({ reward_normalization: { grouping: 'traj_group_id', norm_mean_type: 'batch', norm_std_type: 'batch' } })[0],
    /reward_normalization norm_std_type batch then/,
  );
  assert.deepEqual(warn({ reward_normalization: { grouping: 'traj_group_id', norm_mean_type: 'batch' } }), []);
  assert.deepEqual(warn({ reward_normalization: { grouping: 'batch', method: 'mean_std' } }), []);
  assert.deepEqual(warn({ reward_normalization: { grouping: 'traj_group_id', method: 'identity' } }), []);
  const [byTraj] = configWarnings(validateConfig(quickstart({ reward_normalization: { grouping: 'trajId', method: 'mean_std' } })));
  assert.match(
    byTraj,
    /grouping trajId puts each trajectory in a group of its own, .*; use reward_normalization\.grouping traj_group_id with group_size >= 2, /,
    'trajId: whatever group_size',
  );
  assert.deepEqual(configWarnings(validateConfig(quickstart({ exp_name: 'starpo' }))), [], 'group_size 8');
});

test('config check prints the warning as one line and exits 0', () => {
  const r = spawnSync(
    process.execPath,
    ['bin/starpo.js', 'config', 'check', 'configs/frozen_lake.yaml', 'train_env_manager.group_size=1'],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines[0], 'configs/frozen_lake.yaml: ok');
  assert.deepEqual(lines.filter((l) => l.startsWith('warning: ')).length, 1, 'the groups of one');
  assert.match(
    lines[1],
    /^warning: train_env_manager\.group_size 1 with reward_normalization\.grouping traj_group_id .* norm_mean_type group \/ norm_std_type group then /,
  );
});

test('a positive format_penalty of a training tag is a warning; zero, negative or a validation-only tag is not', () => {
  const check = (overrides: string[]) => loadConfigFile('configs/bandit.yaml', ['exp_name=starpo', ...overrides]).warnings;
  assert.deepEqual(check(['custom_envs.Bandit.env_config.format_penalty=0.5']), [
    '`custom_envs.Bandit.env_config.format_penalty` (from `custom_envs.Bandit.env_config.format_penalty=0.5` on the command line) (0.5) ' +
      'is positive: an answer that does not parse earns a reward, ' +
      "so the policy can learn to stop answering; a penalty is 0 or negative (ROLL's traj_envs.yaml: -0.15 Sokoban, -0.01 FrozenLake)",
  ]);
  assert.deepEqual(check(['custom_envs.Bandit.env_config.format_penalty=0']), []);
  assert.deepEqual(check(['custom_envs.Bandit.env_config.format_penalty=-0.1']), []);
  const valOnly = loadConfigFile('configs/frozen_lake.yaml', [
    'exp_name=starpo',
    'custom_envs.Probe={env_type: frozen_lake, env_config: {format_penalty: 1}}',
    'val_env_manager.tags=[Probe]',
  ]);
  assert.deepEqual(valOnly.warnings, []);
});

test('exp_name and logging_steps are reported as ignored when they ask for something starpo does not do', () => {
  const check = (overrides: string[]) => loadConfigFile('configs/bandit.yaml', overrides).warnings;
  assert.deepEqual(check(['exp_name=starpo']), []);
  assert.deepEqual(check(['exp_name=starpo', 'logging_steps=10']), [
    "`logging_steps` (from `logging_steps=10` on the command line) (10) is ignored: every step's metrics are written (runs/<run>/metrics/step-N.json) and logged",
  ]);
  assert.deepEqual(check([]), [], "starpo's own configs set neither");
  assert.match(
    check(['exp_name=bandit_tiny'])[0],
    /^`exp_name` \(from `exp_name=bandit_tiny` on the command line\) \("bandit_tiny"\) is ignored: a run is named by its run id/,
  );
});

test('a problem or warning about an interpolated key names the variable it is written at, and where that was set', () => {
  // ROLL's layout: custom_envs.FrozenLake is ${custom_env.FrozenLake}, whose max_tokens_per_step is ${max_tokens_per_step}.
  const err = configErrorOf(() => loadConfigFile(ROLL_EXAMPLE, [...ON_TINY, 'max_tokens_per_step=0']));
  assert.match(
    err.message,
    /`custom_envs\.FrozenLake\.max_tokens_per_step` \(interpolated from `max_tokens_per_step`, from `max_tokens_per_step=0` on the command line\): Too small/,
  );
  assert.match(err.message, /^command line: invalid config/); // only the override caused it
  const short = loadConfigFile(ROLL_EXAMPLE, [...ON_TINY, 'max_tokens_per_step=10']);
  assert.ok(
    short.warnings.some((w) =>
      w.startsWith(
        '`custom_envs.FrozenLake.max_tokens_per_step` (interpolated from `max_tokens_per_step`, from `max_tokens_per_step=10` on the command line) (10) cannot hold',
      ),
    ),
    short.warnings.join('\n'),
  );
  // Set in the file that is checked: the variable is named, the file is not.
  const file = mainFile(`defaults:\n  - ${resolve(ROLL_EXAMPLE)}\nmax_tokens_per_step: 10\n`);
  const inFile = loadConfigFile(file, ON_TINY);
  assert.ok(
    inFile.warnings.some((w) =>
      w.startsWith('`custom_envs.FrozenLake.max_tokens_per_step` (interpolated from `max_tokens_per_step`) (10) cannot hold'),
    ),
    inFile.warnings.join('\n'),
  );
});
