/** The docs/configs.md key surface: every key's default, and bad values named with what is allowed. */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import { groupKeyOf } from '../../../src/algo/update';
import { ignoredKeysIn } from '../../../src/config/schema_walk';
import type { Trajectory } from '../../../src/contract';
import { ConfigError, frozenBy, gradientCheckpointing, loraSettings, trackersOf } from '../../../src/contract';
import { validateConfig } from '../../../src/preflight/load';

/** configs/frozen_lake.yaml without the keys whose defaults are under test. */
function minimal(): Record<string, any> {
  const raw = parse(readFileSync('configs/frozen_lake.yaml', 'utf8')) as Record<string, any>;
  for (const k of ['adv_estimator', 'init_kl_coef', 'entropy_loss_coef']) delete raw[k];
  delete raw.actor_train.model_args;
  return raw;
}

function problemsOf(raw: unknown): string {
  try {
    validateConfig(raw, 'test.yaml');
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.problems.join('\n');
  }
  assert.fail('expected a ConfigError');
}

test('docs/configs.md defaults of the algorithm keys', () => {
  const c = validateConfig(minimal());
  assert.equal(c.adv_estimator, 'gae');
  assert.equal(c.use_pg_clip_range, false);
  assert.equal(c.pg_clip_low, 0.2);
  assert.equal(c.pg_clip_high, 0.2);
  assert.equal(c.dual_clip_loss, false);
  assert.equal(c.init_kl_coef, 0.2);
  assert.equal(c.kl_penalty, 'kl');
  assert.equal(c.target_kl, null);
  assert.equal(c.kl_horizon, 10000);
  assert.equal(c.add_token_level_kl, false);
  assert.equal(c.use_kl_loss, false);
  assert.equal(c.kl_loss_coef, 0);
  assert.equal(c.entropy_loss_coef, 0);
  assert.equal(c.critic_warmup, 0);
  assert.equal(c.value_clip, null);
  assert.equal(c.async_generation_ratio, 0);
  assert.equal(c.rollout_filter_ratio, 1);
  assert.equal(c.rollout_filter_type, 'std');
  assert.deepEqual(c.collapse_guard, { enabled: false, min_in_group_std: 0.01, min_entropy: 0.05, patience: 3, action: 'alert' });
  assert.equal(c.reference, undefined);
  assert.equal(c.pretrain, 'tiny');
});

test('every adv_estimator, kl_penalty and rollout_filter_type value is accepted', () => {
  for (const adv_estimator of ['reinforce', 'grpo', 'gae', 'agentic_reinforce']) {
    assert.equal(validateConfig({ ...minimal(), adv_estimator }).adv_estimator, adv_estimator);
  }
  for (const kl_penalty of ['kl', 'abs', 'mse', 'k3', 'full']) {
    assert.equal(validateConfig({ ...minimal(), kl_penalty }).kl_penalty, kl_penalty);
  }
  for (const rollout_filter_type of ['std', 'std_rev', 'top_p']) {
    assert.equal(validateConfig({ ...minimal(), rollout_filter_type }).rollout_filter_type, rollout_filter_type);
  }
  const set = validateConfig({ ...minimal(), target_kl: 0.1, value_clip: null, rollout_filter_ratio: 0.25, critic_warmup: 5 });
  assert.deepEqual([set.target_kl, set.value_clip, set.rollout_filter_ratio, set.critic_warmup], [0.1, null, 0.25, 5]);
});

test('bad values name the key, the value and what is allowed', () => {
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ adv_estimator: 'ppo' }, /`adv_estimator`: .*"reinforce"\|"grpo"\|"agentic_reinforce"\|"gae".*\(got "ppo"\)/],
    [
      { loss_agg_mode: 'mean' },
      /`loss_agg_mode`: .*"token-mean"\|"seq-mean-token-mean"\|"seq-mean-token-sum"\|"seq-mean-token-sum-norm".*\(got "mean"\)/,
    ],
    [{ kl_penalty: 'k2' }, /`kl_penalty`: .*"kl"\|"abs"\|"mse"\|"k3"\|"full".*\(got "k2"\)/],
    [{ rollout_filter_type: 'var' }, /`rollout_filter_type`: .*"std"\|"std_rev"\|"top_p".*\(got "var"\)/],
    [{ rollout_filter_ratio: 0 }, /`rollout_filter_ratio`: .*>0.*\(got 0\)/],
    [{ rollout_filter_ratio: 1.5 }, /`rollout_filter_ratio`: .*<=1.*\(got 1.5\)/],
    [{ init_kl_coef: -0.1 }, /`init_kl_coef`: .*>=0.*\(got -0.1\)/],
    [{ entropy_loss_coef: -1 }, /`entropy_loss_coef`: .*>=0.*\(got -1\)/],
    [{ kl_loss_coef: -1 }, /`kl_loss_coef`: .*>=0.*\(got -1\)/],
    [{ target_kl: 0 }, /`target_kl`: .*>0.*\(got 0\)/],
    [{ kl_horizon: 2.5 }, /`kl_horizon`: .*int.*\(got 2.5\)/],
    [{ critic_warmup: -1 }, /`critic_warmup`: .*>=0.*\(got -1\)/],
    [{ value_clip: 0 }, /`value_clip`: .*>0.*\(got 0\)/],
    [{ use_pg_clip_range: 'yes' }, /`use_pg_clip_range`: .*boolean.*\(got "yes"\)/],
    [{ pg_clip_high: 0 }, /`pg_clip_high`: .*>0.*\(got 0\)/],
    [{ async_generation_ratio: -1 }, /`async_generation_ratio`: .*>=0.*\(got -1\)/],
    [{ collapse_guard: { patience: 0 } }, /`collapse_guard\.patience`: .*>0.*\(got 0\)/],
    [{ collapse_guard: { action: 'kill' } }, /`collapse_guard\.action`: .*"stop"\|"alert".*\(got "kill"\)/],
    [{ collapse_guard: { min_entropi: 0.1 } }, /unknown key `collapse_guard\.min_entropi`; did you mean `min_entropy`\?/],
    [{ critic: { training_args: { learning_rate: 0 } } }, /`critic\.training_args\.learning_rate`: .*>0.*\(got 0\)/],
  ];
  for (const [patch, expected] of cases) assert.match(problemsOf({ ...minimal(), ...patch }), expected);
});

test('pretrain other than tiny must be a local HF folder (a Hub id is not downloaded)', () => {
  assert.match(
    problemsOf({ ...minimal(), pretrain: 'Qwen/Qwen2.5-0.5B-Instruct' }),
    /`pretrain`: Qwen\/Qwen2\.5-0\.5B-Instruct is not a folder; allowed: the preset "tiny" or an HF Qwen2 or Llama model folder .*Hub model ids are not downloaded/,
  );
});

test('async_generation_ratio: whole steps (0 synchronous, 1, 2, ... ahead); a fraction names the key, value and what is allowed', () => {
  for (const r of [0, 1, 3])
    assert.equal(validateConfig({ ...minimal(), async_generation_ratio: r }, 'test.yaml').async_generation_ratio, r);
  assert.match(
    problemsOf({ ...minimal(), async_generation_ratio: 0.5 }),
    /`async_generation_ratio`: 0\.5 is not a whole number of steps; allowed: 0 \(synchronous\) or an integer >= 1/,
  );
});

test('env_config is validated by the env parser at load time', () => {
  const raw = minimal();
  raw.custom_envs.FrozenLake.env_config.sise = 4;
  assert.match(problemsOf(raw), /`custom_envs\.FrozenLake\.env_config\.sise`: .*unknown key "sise" \(did you mean "size"\?\)/);
});

test('ROLL keys accepted as ignored, listed once with dotted paths (per tag for custom_envs)', () => {
  const raw = minimal();
  Object.assign(raw, {
    resume_from_checkpoint: false,
    reward_pretrain: 'Qwen/Qwen2.5-0.5B-Instruct',
    hydra: { run: { dir: '.' } },
    num_gpus_per_node: 8,
    system_envs: { USE_MODELSCOPE: '1' },
    render_save_dir: './output/render',
    track_with: 'tensorboard',
    tracker_kwargs: { log_dir: '/tmp' },
    output_dir: './output',
    logging_dir: './output/logs',
    checkpoint_config: { type: 'file_system' },
    reference: { model_args: { dtype: 'bf16' }, strategy_args: { strategy_name: 'hf_infer' }, device_mapping: 'list(range(0,8))' },
    critic: { device_mapping: 'list(range(0,8))', training_args: { learning_rate: 1e-5 } },
  });
  Object.assign(raw.actor_train, {
    model_args: { dtype: 'bf16' },
    strategy_args: {},
    device_mapping: 'list(range(0,8))',
    infer_batch_size: 2,
    data_args: { template: 'qwen2_5' },
  });
  Object.assign(raw.train_env_manager, { format_penalty: -0.15, env_manager_cls: 'x.TrajEnvManager' });
  Object.assign(raw.custom_envs.FrozenLake, {
    env_manager_cls: 'x.TrajEnvManager',
    use_thread_lock: true,
    history_length: 5,
    user_prompt_format: '<answer>{}</answer>',
    reward_template: 'r',
  });
  const c = validateConfig(raw);
  assert.equal(c.critic.training_args.learning_rate, 1e-5);
  assert.deepEqual(ignoredKeysIn(raw), [
    'output_dir',
    'logging_dir',
    'checkpoint_config',
    'num_gpus_per_node',
    'system_envs',
    'render_save_dir',
    'resume_from_checkpoint',
    'reward_pretrain',
    'hydra',
    'reference',
    'actor_train.strategy_args',
    'actor_train.device_mapping',
    'actor_train.infer_batch_size',
    'actor_train.data_args',
    'actor_train.model_args.dtype',
    'critic.device_mapping',
    'train_env_manager.format_penalty',
    'train_env_manager.env_manager_cls',
    'custom_envs.FrozenLake.env_manager_cls',
    'custom_envs.FrozenLake.use_thread_lock',
    'custom_envs.FrozenLake.history_length',
    'custom_envs.FrozenLake.user_prompt_format',
    'custom_envs.FrozenLake.reward_template',
  ]);
});

test("each role holds only the blocks it uses; ROLL's other blocks are accepted, listed as ignored, not filled in", () => {
  const c = validateConfig(minimal());
  assert.deepEqual(Object.keys(c.actor_train), ['training_args', 'model_args']);
  assert.deepEqual(c.actor_train.model_args, {
    disable_gradient_checkpointing: false,
    model_name_or_path: null,
    lora_target: null,
    lora_rank: 8,
    lora_alpha: 16,
    lora_dropout: 0,
    additional_target: null,
    adapter_name_or_path: null,
    freeze_module_prefix: null,
    model_config_kwargs: {},
  });
  assert.deepEqual(c.actor_train.training_args, {
    learning_rate: 1e-4,
    adam_beta1: 0.9,
    adam_beta2: 0.999,
    weight_decay: 0,
    lr_scheduler_type: 'constant',
    warmup_steps: 0,
    per_device_train_batch_size: 8,
    gradient_accumulation_steps: 8,
  });
  assert.deepEqual(Object.keys(c.actor_infer), ['generating_args']);
  assert.deepEqual(c.critic, {
    training_args: {
      learning_rate: 5e-5,
      adam_beta1: 0.9,
      adam_beta2: 0.999,
      weight_decay: 0,
      lr_scheduler_type: 'linear',
      warmup_steps: 0,
    },
  });
  const raw = minimal();
  Object.assign(raw.actor_train, { generating_args: { max_new_tokens: 128 } });
  raw.actor_train.training_args.num_train_epochs = 2;
  Object.assign(raw.actor_infer, { training_args: { learning_rate: 1 } });
  raw.critic = {
    generating_args: {},
    training_args: { learning_rate: 1e-5, per_device_train_batch_size: 2, gradient_accumulation_steps: 4, num_train_epochs: 1 },
  };
  raw.reference = { training_args: { learning_rate: 1 }, generating_args: {} };
  const set = validateConfig(raw);
  assert.deepEqual(
    set.critic.training_args,
    {
      learning_rate: 1e-5,
      adam_beta1: 0.9,
      adam_beta2: 0.999,
      weight_decay: 0,
      lr_scheduler_type: 'linear',
      warmup_steps: 0,
      per_device_train_batch_size: 2,
      gradient_accumulation_steps: 4,
      num_train_epochs: 1,
    },
    'ignored keys pass through as written',
  );
  assert.deepEqual(ignoredKeysIn(raw), [
    'reference',
    'actor_train.generating_args',
    'actor_train.training_args.num_train_epochs',
    'actor_infer.training_args',
    'critic.generating_args',
    'critic.training_args.per_device_train_batch_size',
    'critic.training_args.gradient_accumulation_steps',
    'critic.training_args.num_train_epochs',
  ]);
});

test("actor_train.model_args: ROLL's keys that decide what is trained are typed and used (LoRA's with ROLL's defaults); the others ignored", () => {
  const withArgs = (model_args: unknown) => ({ ...minimal(), actor_train: { ...minimal().actor_train, model_args } });
  assert.equal(gradientCheckpointing(validateConfig(minimal()).actor_train), true);
  assert.equal(gradientCheckpointing(validateConfig(withArgs({ disable_gradient_checkpointing: true })).actor_train), false);
  assert.equal(gradientCheckpointing(validateConfig(withArgs({ disable_gradient_checkpointing: null })).actor_train), true, "ROLL's None");
  assert.equal(gradientCheckpointing({}), true, 'a run stored before the key existed');
  assert.equal(loraSettings(undefined), null, 'a run stored before model_args existed trains every weight');
  assert.equal(frozenBy(undefined)('model.norm.weight'), false, 'and freezes none');
  const roll = { lora_rank: 8, lora_target: 'all', dtype: 'bf16', model_config_kwargs: {}, disable_gradient_checkpointing: false };
  const args = validateConfig(withArgs(roll)).actor_train.model_args;
  assert.deepEqual(
    [args.lora_target, args.lora_rank, args.lora_alpha, args.lora_dropout, args.dtype],
    ['all', 8, 16, 0, 'bf16'],
    "lora_alpha defaults to 2 x lora_rank, lora_dropout to 0 (ROLL's ModelArguments)",
  );
  assert.deepEqual(
    ignoredKeysIn(withArgs(roll)).filter((k) => k.startsWith('actor_train.model_args')),
    ['actor_train.model_args.dtype'],
  );
  assert.match(
    problemsOf(withArgs({ lora_target: 'all', lora_rank: 0 })),
    /`actor_train\.model_args\.lora_rank`: allowed: a whole number >= 1 \(got 0\)/,
  );
  assert.match(
    problemsOf(withArgs({ lora_target: 'all', lora_rank: 2.5 })),
    /`actor_train\.model_args\.lora_rank`: allowed: a whole number >= 1 \(got 2\.5\)/,
  );
  assert.match(
    problemsOf(withArgs({ lora_target: 'q_proj,qkv' })),
    /`actor_train\.model_args\.lora_target`: "qkv" names no linear layer of the decoder; allowed: all/,
  );
  assert.match(
    problemsOf(withArgs({ additional_target: 'lm_head' })),
    /`actor_train\.model_args\.additional_target`: "lm_head" trains modules beside LoRA adapters; set lora_target too/,
  );
  assert.match(
    problemsOf(withArgs({ freeze_module_prefix: 'model.vision' })),
    /`actor_train\.model_args\.freeze_module_prefix`: "model\.vision" is the prefix of no weight/,
  );
  assert.match(
    problemsOf(withArgs({ model_config_kwargs: { num_hidden_layers: 2 } })),
    /`actor_train\.model_args\.model_config_kwargs`: .* would change the model's config; allowed: \{\}/,
  );
  assert.match(
    problemsOf(withArgs({ model_name_or_path: '/models/other' })),
    /`actor_train\.model_args\.model_name_or_path`: "\/models\/other" is not the run's pretrain/,
  );
  assert.match(
    problemsOf({ ...minimal(), critic: { model_args: { lora_target: 'all' } } }),
    /`critic\.model_args\.lora_target`: "all" is not supported: the critic trains every weight/,
  );
  assert.match(
    problemsOf(withArgs({ disable_gradient_checkpointing: 'yes' })),
    /`actor_train\.model_args\.disable_gradient_checkpointing`: .*boolean.*\(got "yes"\)/,
  );
  assert.match(
    problemsOf(withArgs({ disable_gradient_checkpoint: true })),
    /unknown key `actor_train\.model_args\.disable_gradient_checkpoint`; did you mean `disable_gradient_checkpointing`\?/,
  );
});

test('reward_normalization.grouping: batch, traj_group_id, tags or a scalar trajectory field, checked at load time', () => {
  assert.equal(validateConfig({ ...minimal(), reward_normalization: { grouping: 'seed' } }).reward_normalization.grouping, 'seed');
  assert.equal(
    problemsOf({ ...minimal(), reward_normalization: { grouping: 'trajgroupid' } }),
    '`reward_normalization.grouping`: expected batch, traj_group_id, tags or a trajectory field (trajGroupId, trajId, tag, groupId, ' +
      'envId, seed, split, step, episodeScore, success, truncated); did you mean "traj_group_id"? (got "trajgroupid")',
  );
  assert.ok(problemsOf({ ...minimal(), reward_normalization: { grouping: 'turns' } }).endsWith('success, truncated) (got "turns")'));
  const t = { trajGroupId: 'FrozenLake_0_0_1', tag: 'FrozenLake', seed: 1 } as Trajectory;
  assert.equal(groupKeyOf(t, 'seed'), '1');
  assert.throws(
    () => groupKeyOf(t, 'colour'),
    (err: unknown) =>
      err instanceof ConfigError &&
      err.message ===
        'run config: invalid config\n' +
          '  - reward_normalization.grouping: "colour" is not a trajectory field (allowed: batch, traj_group_id, tags, trajGroupId, trajId, tag, ' +
          'groupId, envId, seed, split, step, episodeScore, success, truncated)',
    'never a retryable plain Error at update time',
  );
});

test("sequence_length must fit the model's max_position_embeddings", () => {
  assert.equal(validateConfig({ ...minimal(), sequence_length: 2048 }).sequence_length, 2048);
  assert.equal(
    problemsOf({ ...minimal(), sequence_length: 4096 }),
    "`sequence_length`: 4096 is more than the tiny model's max_position_embeddings (2048); allowed: <= 2048",
  );
});

test("track_with: ROLL's one tracker, a list of them, or null; trackersOf lists them without repeats", () => {
  assert.deepEqual(trackersOf(validateConfig(minimal())), []);
  assert.deepEqual(trackersOf(validateConfig({ ...minimal(), track_with: 'tensorboard', tracker_kwargs: { log_dir: '/t' } })), [
    'tensorboard',
  ]);
  assert.deepEqual(
    trackersOf(validateConfig({ ...minimal(), track_with: ['tensorboard', 'tensorboard'], tracker_kwargs: { log_dir: '/t' } })),
    ['tensorboard'],
  );
  assert.deepEqual(trackersOf(validateConfig({ ...minimal(), track_with: ['mlflow', 'tensorboard'], tracker_kwargs: { log_dir: '/t' } })), [
    'tensorboard',
    'mlflow',
  ]);
  assert.deepEqual(trackersOf(validateConfig({ ...minimal(), track_with: ['wandb', 'tensorboard'], tracker_kwargs: { log_dir: '/t' } })), [
    'tensorboard',
    'wandb',
  ]);
  // a run.json stored while track_with was ignored may name a tracker starpo does not write
  assert.deepEqual(trackersOf({ track_with: 'swanlab' as never }), []);
});
