/** The shipped configs: ROLL's Hydra example at ROLL's layout, StarPO-S and GRPO+KL; ROLL env_config keys. */

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { ConfigError } from '../../../src/contract';
import { parseBanditConfig } from '../../../src/envs/bandit';
import { parseFrozenLakeConfig } from '../../../src/envs/frozen_lake';
import { acceptedNotes, loadConfigFile } from '../../../src/preflight/load';
import { configErrorOf } from '../../helpers/config_error';
import { materializeHfVariant, removeHfFolder } from '../../helpers/hf_models';
import { smollm2Folder } from '../../helpers/smollm2';

const EXAMPLE = 'configs/examples/agent_val_frozen_lake.yaml';
/** The real-model config: its `pretrain` folder is not in the repository (docs/configs.md). */
const QWEN = 'configs/qwen2.5-0.5b-instruct_frozen_lake.yaml';

test("ROLL's agent_val_frozen_lake example resolves through its defaults file", () => {
  const { config } = loadConfigFile(EXAMPLE);
  const lake = config.custom_envs.FrozenLake;
  assert.equal(lake.max_tokens_per_step, 24, 'the top-level max_tokens_per_step override reaches the env');
  assert.equal(lake.max_steps, 10);
  assert.equal(lake.agent_template, '{observation}');
  assert.deepEqual(lake.env_config, { action_pattern: '<answer>(.*?)</answer>', max_steps: 10, format_penalty: -0.01, is_slippery: false });
  assert.deepEqual(Object.keys(config.custom_envs), ['FrozenLake']);
  assert.equal(config.adv_estimator, 'reinforce');
  assert.deepEqual(config.reward_normalization, {
    grouping: 'traj_group_id',
    method: 'mean',
    norm_mean_type: 'group',
    norm_std_type: null,
  });
  assert.deepEqual(
    [
      config.whiten_advantages,
      config.advantage_clip,
      config.ppo_epochs,
      config.init_kl_coef,
      config.entropy_loss_coef,
      config.max_grad_norm,
    ],
    [true, 0.2, 1, 0, 0, 1.0],
  );
  assert.deepEqual([config.rollout_batch_size, config.val_batch_size, config.sequence_length, config.max_steps], [32, 32, 768, 20]);
  assert.equal(config.actor_infer.generating_args.max_new_tokens, 24);
  assert.equal(config.pretrain, 'tiny');
  assert.deepEqual(config.checkpoint_config, { type: 'file_system', output_dir: './output/models/agentic_pipeline' });
  assert.deepEqual(parseFrozenLakeConfig(lake.env_config).max_steps, 10);
});

test("the example lists ROLL's ignored keys and the interpolation variables of traj_envs.yaml once", () => {
  const loaded = loadConfigFile(EXAMPLE);
  assert.deepEqual(loaded.ignored, [
    'output_dir',
    'logging_dir',
    'checkpoint_config',
    'num_gpus_per_node',
    'system_envs',
    'render_save_dir',
    'resume_from_checkpoint',
    'hydra',
    'reference',
    'actor_train.strategy_args',
    'actor_train.device_mapping',
    'actor_train.infer_batch_size',
    'actor_train.data_args',
    'actor_train.model_args.attn_implementation',
    'actor_train.model_args.dtype',
    'actor_train.model_args.model_type',
    'actor_infer.model_args',
    'actor_infer.strategy_args',
    'actor_infer.device_mapping',
    'actor_infer.data_args',
    'custom_envs.FrozenLake.env_manager_cls',
    'custom_envs.FrozenLake.use_thread_lock',
  ]);
  assert.deepEqual(loaded.variables, [
    {
      file: 'configs/config/traj_envs.yaml',
      keys: [
        'action_pattern',
        'think_action_pattern',
        'max_tokens_per_step',
        'max_actions_per_traj',
        'frozen_format_penalty',
        'bandit_format_penalty',
        'env_manager_cls',
        'custom_env',
        'agent_system_template',
        'agent_template',
      ],
    },
  ]);
  const notes = acceptedNotes(loaded);
  assert.equal(notes.length, 3);
  assert.equal(
    notes[0],
    'warning: `exp_name` ("agentic_pipeline") is ignored: a run is named by its run id (`--run-id`, default <config name>-<time>)',
  );
  assert.match(notes[1], /^ignored \(accepted for ROLL compatibility, not used\): output_dir, /);
  assert.match(notes[2], /^interpolation variables from configs\/config\/traj_envs\.yaml: action_pattern, think_action_pattern, /);
});

test('overrides apply after the defaults merge and before interpolation', () => {
  const { config } = loadConfigFile(EXAMPLE, [
    'max_tokens_per_step=16',
    'max_actions_per_traj=4',
    'seed=7',
    '++train_env_manager.tags=[FrozenLake]',
  ]);
  assert.equal(config.custom_envs.FrozenLake.max_tokens_per_step, 16);
  assert.equal(config.custom_envs.FrozenLake.max_steps, 4);
  assert.equal(config.custom_envs.FrozenLake.env_config.max_steps, 4);
  assert.equal(config.seed, 7);
  assert.throws(
    () => loadConfigFile(EXAMPLE, ['rollout_batch_sise=8']),
    /command line: invalid config\n {2}- unknown key `rollout_batch_sise` \(from `rollout_batch_sise=8` on the command line\); did you mean `rollout_batch_size`\?/,
  );
});

test('StarPO-S and GRPO+KL configs load on top of the quickstart', () => {
  const s = loadConfigFile('configs/starpo_s_frozen_lake.yaml').config;
  assert.equal(s.adv_estimator, 'gae');
  assert.equal(s.critic.training_args.learning_rate, 1e-3);
  assert.deepEqual([s.rollout_filter_ratio, s.rollout_filter_type], [0.25, 'std']);
  assert.deepEqual([s.use_pg_clip_range, s.pg_clip_low, s.pg_clip_high], [true, 0.2, 0.28]);
  assert.deepEqual([s.init_kl_coef, s.entropy_loss_coef], [0, 0.001]);
  assert.deepEqual(s.collapse_guard, { enabled: true, min_in_group_std: 0.01, min_entropy: 0.05, patience: 3, action: 'alert' });
  assert.equal(s.rollout_batch_size, 64);
  assert.equal(s.custom_envs.FrozenLake.max_tokens_per_step, 24);
  const g = loadConfigFile('configs/grpo_kl_frozen_lake.yaml').config;
  assert.equal(g.adv_estimator, 'grpo');
  assert.deepEqual(g.reward_normalization, {
    grouping: 'traj_group_id',
    method: 'mean_std',
    norm_mean_type: 'group',
    norm_std_type: 'group',
  });
  assert.deepEqual([g.use_kl_loss, g.kl_loss_coef, g.kl_penalty, g.init_kl_coef], [true, 0.01, 'k3', 0]);
  assert.equal(g.warmup.train_steps, 150);
});

test("frozen_lake_neighbors.yaml is the recipe its sweep ran: the solver config with the sweep's overrides", () => {
  // The overrides of docs/results.md, "A longer warm start, over 3 seeds".
  const swept = loadConfigFile('configs/frozen_lake_solver.yaml', [
    'custom_envs.FrozenLake.env_config.observation_format=grid_neighbors',
    'sequence_length=1024',
    'warmup.num_episodes=16384',
    'warmup.lr_scheduler_type=linear',
    'warmup.train_steps=1600',
    'train_env_manager.num_env_groups=16',
    'train_env_manager.group_size=4',
    'train_env_manager.num_groups_partition=[16]',
    'max_steps=300',
  ]).config;
  assert.deepEqual(loadConfigFile('configs/frozen_lake_neighbors.yaml').config, swept);
});

test('every shipped config loads, and every custom_env of traj_envs.yaml resolves to a valid entry', async () => {
  await smollm2Folder(); // the SmolLM2 configs name it by its `starpo model get` name
  const shipped = readdirSync('configs', { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.yaml') && !f.startsWith('config/'))
    .map((f) => join('configs', f));
  assert.ok(shipped.length >= 6, shipped.join(', '));
  for (const file of shipped.filter((f) => f !== QWEN)) assert.ok(loadConfigFile(file).config, file);
  const tags = Object.keys(parse(readFileSync('configs/config/traj_envs.yaml', 'utf8')).custom_env as object);
  assert.ok(tags.includes('FrozenLakeThink'), tags.join(', '));
  const { config } = loadConfigFile(
    EXAMPLE,
    tags.map((tag) => `++custom_envs.${tag}=\${custom_env.${tag}}`),
  );
  assert.deepEqual(Object.keys(config.custom_envs), ['FrozenLake', ...tags.filter((t) => t !== 'FrozenLake')]);
  assert.equal(config.custom_envs.FrozenLakeThink.env_config.action_pattern, '<think>(.*?)</think>\\s*<answer>(.*?)</answer>');
});

test('a top-level key that is neither a schema key nor from a defaults file is still an error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-cfg-'));
  const file = join(dir, 'main.yaml');
  writeFileSync(file, `defaults:\n  - ${resolve('configs/frozen_lake')}\nmy_var: 3\n`);
  try {
    loadConfigFile(file);
    assert.fail('expected a ConfigError');
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /unknown key `my_var`/);
  }
});

test('a config naming a model `starpo model get` fetches reads its folder in the cache, or says to fetch it', async () => {
  const dir = await smollm2Folder();
  assert.equal(loadConfigFile('configs/smollm2_bandit.yaml').config.pretrain, dir);
  const empty = mkdtempSync(join(tmpdir(), 'starpo-cache-'));
  const saved = process.env.STARPO_CACHE_DIR;
  process.env.STARPO_CACHE_DIR = empty;
  try {
    const err = configErrorOf(() => loadConfigFile('configs/smollm2_bandit.yaml'));
    assert.deepEqual(err.problems, [
      `\`pretrain\`: smollm2-135m-instruct is not fetched yet (${join(empty, 'models', 'smollm2-135m-instruct-0.1.2')} does not exist); run \`npx starpo model get smollm2-135m-instruct\` once`,
    ]);
  } finally {
    if (saved === undefined) delete process.env.STARPO_CACHE_DIR;
    else process.env.STARPO_CACHE_DIR = saved;
    rmSync(empty, { recursive: true, force: true });
  }
});

test("the Qwen2.5-0.5B-Instruct config is ROLL's example at ROLL's values; without the model folder the one problem names it", () => {
  const err = configErrorOf(() => loadConfigFile(QWEN));
  assert.equal(err.problems.length, 1, err.message);
  assert.ok(err.problems[0].startsWith(`\`pretrain\`: ${resolve('models/Qwen2.5-0.5B-Instruct')} is not a folder; `), err.problems[0]);
  // A tiny Qwen2 folder with the real Qwen2.5 tokenizer stands in for the 0.5B weights.
  const dir = materializeHfVariant('tied_gqa');
  try {
    const { config, warnings } = loadConfigFile(QWEN, [`pretrain=${dir}`]);
    assert.equal(config.pretrain, dir);
    assert.deepEqual(warnings, [
      '`exp_name` ("agentic_pipeline") is ignored: a run is named by its run id (`--run-id`, default <config name>-<time>)',
    ]);
    assert.equal(config.warmup.type, 'none');
    assert.deepEqual([config.adv_estimator, config.whiten_advantages, config.advantage_clip, config.init_kl_coef], ['grpo', true, 0.2, 0]);
    assert.deepEqual(config.reward_normalization, {
      grouping: 'traj_group_id',
      method: 'mean_std',
      norm_mean_type: 'group',
      norm_std_type: 'group',
    });
    assert.deepEqual(
      [config.rollout_batch_size, config.val_batch_size, config.sequence_length, config.max_steps],
      [1024, 1024, 8192, 1024],
    );
    const t = config.actor_train.training_args;
    assert.deepEqual(
      [t.learning_rate, t.per_device_train_batch_size, t.gradient_accumulation_steps, t.warmup_steps, t.lr_scheduler_type],
      [1e-6, 2, 64, 10, 'cosine'],
    );
    assert.deepEqual(config.val_env_manager.tags, ['SimpleSokoban', 'LargerSokoban', 'SokobanDifferentGridVocab', 'FrozenLake']);
    assert.equal(config.custom_envs.FrozenLake.max_tokens_per_step, 64);
  } finally {
    removeHfFolder(dir);
  }
});

test("FrozenLake accepts ROLL's env_config keys", () => {
  const c = parseFrozenLakeConfig({
    env_instruction: 'Solve it.',
    action_pattern: '<think>(.*?)</think>\\s*<answer>(.*?)</answer>',
    max_steps: 10,
    is_slippery: true,
    format_penalty: -0.01,
    size: 4,
    p: 0.8,
    success_rate: 0.5,
    render_mode: 'text',
    map_seed: 3,
  });
  assert.equal(c.env_instruction, 'Solve it.');
  assert.equal(c.success_rate, 0.5);
  assert.throws(
    () => parseFrozenLakeConfig({ action_pattern: '<answer>(.*?</answer>' }),
    /action_pattern must be a regular expression, got "<answer>\(\.\*\?<\/answer>"/,
  );
  assert.throws(() => parseFrozenLakeConfig({ render_mode: 'rgb_array' }), /render_mode must be "text", got "rgb_array"/);
});

test("Bandit accepts ROLL's env_config keys (hi_arm_hiscore is ROLL's name of hi_arm_score)", () => {
  const c = parseBanditConfig({
    lo_arm_name: 'phoenix',
    hi_arm_name: 'dragon',
    action_space_start: 1,
    lo_arm_score: 0.1,
    hi_arm_loscore: 0,
    hi_arm_hiscore: 2,
    hi_arm_hiscore_prob: 0.25,
    render_mode: 'text',
    action_pattern: '<answer>(.*?)</answer>',
  });
  assert.equal(c.hi_arm_score, 2);
  assert.throws(
    () => parseBanditConfig({ hi_arm_score: 1, hi_arm_hiscore: 2 }),
    /give one of hi_arm_score and hi_arm_hiscore \(ROLL's name\), got 1 and 2/,
  );
});
