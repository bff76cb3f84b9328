/**
 * Cross-key rules of docs/configs.md-3 that a per-key schema cannot express: batch sizes against group
 * sizes and minibatches, tags against partitions and custom_envs, env types and their env_config
 * (checked by the env's own parser), `pretrain` and sequence_length against the model,
 * async_generation_ratio's whole steps, the heartbeat timeout against the watchdog, and the filter strategy's keys.
 */

import { existsSync } from 'node:fs';
import { show } from '../config/issues';
import { EnvConfigError, type EnvManagerConfig, type RunConfig, trackersOf } from '../contract';
import { createEnv, ENV_TYPES, validateEnvConfig } from '../envs/registry';
import { TINY_PRESET, tinyPreset } from '../model/config';
import { pretrainedProblems } from '../model/hf/folder';
import { PYPI_MODELS, pypiModelDir } from '../model/pypi_models';
import { charTokenizer } from '../model/tokenizer';
import { modelArgsProblems } from './model_args';

type ManagerName = 'train_env_manager' | 'val_env_manager';

function managerProblems(cfg: RunConfig, name: ManagerName, batchKey: 'rollout_batch_size' | 'val_batch_size'): string[] {
  const problems: string[] = [];
  const m: EnvManagerConfig = cfg[name];
  const batch = cfg[batchKey];
  if (m.tags.length !== m.num_groups_partition.length) {
    problems.push(
      `\`${name}.num_groups_partition\`: ${show(m.num_groups_partition)} must have one entry per tag (${m.tags.length} ${m.tags.length === 1 ? 'tag' : 'tags'}: ${m.tags.join(', ')})`,
    );
  }
  const sum = m.num_groups_partition.reduce((a, b) => a + b, 0);
  if (sum !== m.num_env_groups) {
    problems.push(
      `\`${name}.num_groups_partition\`: ${show(m.num_groups_partition)} sums to ${sum}; it must sum to num_env_groups (${m.num_env_groups})`,
    );
  }
  if (batch % m.group_size !== 0) {
    problems.push(`\`${batchKey}\`: ${batch} is not a multiple of ${name}.group_size (${m.group_size}); allowed: k * ${m.group_size}`);
  }
  const envsPerGroup = m.group_size + m.group_size_redundancy;
  if (m.max_env_num_per_worker > 0 && m.max_env_num_per_worker % envsPerGroup !== 0) {
    problems.push(
      `\`${name}.max_env_num_per_worker\`: ${m.max_env_num_per_worker} must be 0 (all in one worker) or a multiple of group_size + group_size_redundancy (${envsPerGroup}) so a group stays in one worker`,
    );
  }
  if (name === 'train_env_manager' && m.fixed_states) {
    problems.push('`train_env_manager.fixed_states`: true is for validation only (val_env_manager); training plays new states every step');
  }
  for (const tag of m.tags) {
    if (!(tag in cfg.custom_envs)) {
      problems.push(
        `\`${name}.tags\`: tag ${show(tag)} has no entry in custom_envs (defined: ${Object.keys(cfg.custom_envs).join(', ') || 'none'})`,
      );
    }
  }
  return problems;
}

/** RAGEN-2's strategy keys: a type it knows, and a whole number of groups for top_k_abs. */
function filterProblems(cfg: RunConfig): string[] {
  if (cfg.rollout_filter_strategy === null) return [];
  const out: string[] = [];
  if (cfg.rollout_filter_type === 'top_p') {
    out.push(
      '`rollout_filter_type`: top_p is a strategy, not a type, once `rollout_filter_strategy` is set; allowed with a strategy: largest (= std) or smallest (= std_rev)',
    );
  }
  if (cfg.rollout_filter_strategy === 'top_k_abs' && !Number.isInteger(cfg.rollout_filter_value)) {
    out.push(`\`rollout_filter_value\`: ${cfg.rollout_filter_value} is not a whole number of groups; top_k_abs keeps that many groups`);
  }
  return out;
}

function envProblems(cfg: RunConfig): string[] {
  const problems: string[] = [];
  for (const [tag, env] of Object.entries(cfg.custom_envs)) {
    if (!ENV_TYPES.includes(env.env_type)) {
      problems.push(`\`custom_envs.${tag}.env_type\`: ${show(env.env_type)} is not a known env type (allowed: ${ENV_TYPES.join(', ')})`);
      continue;
    }
    try {
      validateEnvConfig(env.env_type, env.env_config);
    } catch (err) {
      // Named down to the env_config key, so the problem line names the argument or file that set it.
      const key = err instanceof EnvConfigError && err.key !== undefined ? `.${err.key}` : '';
      problems.push(`\`custom_envs.${tag}.env_config${key}\`: ${(err as Error).message}`);
    }
  }
  return problems;
}

/** `warmup.type: solver` needs a solve() on the env of every train tag (Env.solve). */
function solverProblems(cfg: RunConfig): string[] {
  if (cfg.warmup.type !== 'solver') return [];
  return cfg.train_env_manager.tags.flatMap((tag) => {
    const env = cfg.custom_envs[tag];
    if (!env || !ENV_TYPES.includes(env.env_type)) return []; // reported above
    try {
      if (typeof createEnv(env.env_type, env.env_config).solve === 'function') return [];
    } catch {
      return []; // a bad env_config is reported above
    }
    return [
      `\`warmup.type\`: solver needs a solver for every train tag, but tag ${show(tag)} (env_type ${env.env_type}) has no solve(); use warmup.type format, or drop the tag`,
    ];
  });
}

/**
 * `pretrain`: the tiny preset's max_position_embeddings against sequence_length, or every problem of the
 * HF folder (model/hf/folder.ts: config.json, tokenizer.json, weight shapes, sequence_length).
 */
function pretrainProblems(cfg: RunConfig): string[] {
  const overrides = Object.keys(cfg.config_overrides);
  if (cfg.pretrain !== TINY_PRESET) {
    const fetchable = Object.values(PYPI_MODELS).find((m) => pypiModelDir(m) === cfg.pretrain);
    if (fetchable && !existsSync(cfg.pretrain)) {
      return [
        `\`pretrain\`: ${fetchable.name} is not fetched yet (${cfg.pretrain} does not exist); run \`npx starpo model get ${fetchable.name}\` once`,
      ];
    }
    const problems = pretrainedProblems(cfg.pretrain, cfg.sequence_length).map((p) => `\`pretrain\`: ${p}`);
    if (overrides.length > 0)
      problems.push(
        `\`config_overrides\`: ${overrides.join(', ')} set with \`pretrain: ${cfg.pretrain}\`; allowed only with \`pretrain: tiny\` (a model folder's weights fix its sizes)`,
      );
    return problems;
  }
  let maxPositions: number;
  try {
    maxPositions = tinyPreset(charTokenizer().vocabSize, cfg.config_overrides).max_position_embeddings;
  } catch (err) {
    return [`\`config_overrides\`: ${JSON.stringify(cfg.config_overrides)} makes no valid tiny model: ${(err as Error).message}`];
  }
  if (cfg.sequence_length <= maxPositions) return [];
  return [
    `\`sequence_length\`: ${cfg.sequence_length} is more than the tiny model's max_position_embeddings (${maxPositions}); allowed: <= ${maxPositions}`,
  ];
}

/**
 * watchdog_seconds bounds a computation between two heartbeats (the relay heartbeats for it until then,
 * docs/durability.md "Liveness"); a heartbeat timeout at or above it would let the watchdog end attempts
 * the server still waits for, so a longer timeout meant to admit longer computations would not.
 */
function livenessProblems(cfg: RunConfig): string[] {
  const { watchdog_seconds: watchdog, heartbeat_timeout_seconds: timeout } = cfg;
  if (watchdog === 0 || timeout < watchdog) return [];
  return [
    `\`heartbeat_timeout_seconds\`: ${timeout} must be less than watchdog_seconds (${watchdog}); watchdog_seconds is the longest an activity may compute between two heartbeats (raise it for longer computations, or set it to 0 to switch the watchdog off)`,
  ];
}

/** A tracker that writes files needs their folder (W&B's run files are its cursor, online too). */
function trackerProblems(cfg: RunConfig): string[] {
  if (cfg.tracker_kwargs.log_dir) return [];
  return trackersOf(cfg)
    .filter((t) => t !== 'mlflow')
    .map(
      (t) =>
        `\`tracker_kwargs.log_dir\`: missing; \`track_with: ${t}\` needs it (allowed: a folder path; the run's ${t === 'wandb' ? 'W&B run files' : 'event files'} go to <log_dir>/<runId>)`,
    );
}

/** Every cross-key problem of a schema-valid config, one line each (empty when it can run). */
export function crossKeyProblems(cfg: RunConfig): string[] {
  const problems = [
    ...managerProblems(cfg, 'train_env_manager', 'rollout_batch_size'),
    ...managerProblems(cfg, 'val_env_manager', 'val_batch_size'),
    ...envProblems(cfg),
    ...solverProblems(cfg),
  ];
  const train = cfg.actor_train.training_args;
  const miniBatch = train.per_device_train_batch_size * train.gradient_accumulation_steps;
  if (cfg.rollout_batch_size % miniBatch !== 0) {
    problems.push(
      `\`actor_train.training_args\`: per_device_train_batch_size * gradient_accumulation_steps = ${miniBatch} must divide rollout_batch_size (${cfg.rollout_batch_size})`,
    );
  }
  problems.push(...pretrainProblems(cfg), ...modelArgsProblems(cfg), ...livenessProblems(cfg), ...trackerProblems(cfg));
  if (!Number.isInteger(cfg.async_generation_ratio)) {
    // ROLL: "currently only integer is supported" (roll/configs/base_config.py); r counts whole steps of policy lag.
    problems.push(
      `\`async_generation_ratio\`: ${cfg.async_generation_ratio} is not a whole number of steps; allowed: 0 (synchronous) or an integer >= 1 (rollouts run that many steps ahead of the update)`,
    );
  }
  problems.push(...filterProblems(cfg));
  return problems;
}
