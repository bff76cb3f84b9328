/**
 * Which env groups a step plays, with which seeds, on which shard (docs/numerics.md §3). Pure and
 * deterministic, so the workflow calls it directly.
 */
import type { EnvManagerConfig, GeneratingArgs, RolloutGroup, RunConfig } from '../contract';
import { ConfigError } from '../contract/errors';
import { deriveSeed } from '../util/rng';

/** Envs per group: group_size + group_size_redundancy (ROLL EnvManagerConfig.final_group_size). */
export function envsPerGroup(manager: Pick<EnvManagerConfig, 'group_size' | 'group_size_redundancy'>): number {
  return manager.group_size + manager.group_size_redundancy;
}

/**
 * The sampling settings of a split: the env manager's generating_args merged over
 * actor_infer.generating_args, so validation can sample differently (e.g. temperature 0.2). ROLL
 * instead overwrites both managers' generating_args with actor_infer's when that has any
 * (AgenticConfig.__post_init__).
 */
export function generatingArgsOf(config: RunConfig, split: 'train' | 'val'): GeneratingArgs {
  const manager = split === 'train' ? config.train_env_manager : config.val_env_manager;
  return { ...config.actor_infer.generating_args, ...manager.generating_args };
}

/** The tag of each env group index, from tags and num_groups_partition. */
export function tagOfEnvGroup(tags: readonly string[], partition: readonly number[], envGroup: number): string {
  let upTo = 0;
  for (let i = 0; i < tags.length; i++) {
    upTo += partition[i];
    if (envGroup < upTo) return tags[i];
  }
  throw new RangeError(`env group ${envGroup} is beyond num_groups_partition ${JSON.stringify(partition)}`);
}

/** A group, its trajGroupId made from the other fields. */
export function rolloutGroup(tag: string, groupId: number, episode: number, seed: number, stream: Array<number | string>): RolloutGroup {
  return { tag, groupId, episode, seed, trajGroupId: `${tag}_${groupId}_${episode}_${seed}`, stream };
}

/**
 * The fresh group that replaces a failed one (an env threw or ran over its time budget): same
 * tag, id and episode, seed deriveSeed(old seed, "replace"), stream [...old, "replace"].
 * Deterministic, so a replayed step replaces the same way; chaining gives each retry new states.
 */
export function replacementGroup(failed: RolloutGroup): RolloutGroup {
  return rolloutGroup(failed.tag, failed.groupId, failed.episode, deriveSeed(failed.seed, 'replace'), [...failed.stream, 'replace']);
}

/**
 * The groups of one step, split into shards of at most max_env_num_per_worker envs
 * (0 = one shard). Returns shards[k] = groups of shard k.
 *
 * A step plays rollout_batch_size / group_size groups (val: val_batch_size / group_size). Group g
 * takes the tag of env group (g mod num_env_groups) in the order of tags / num_groups_partition; each
 * of its group_size + group_size_redundancy members has its own env id. Seeds are a pure function of
 * (seed, split, step, g): train (seed, "train", step, g); validation (seed, "val", step, g), its own
 * stream of the run seed (ROLL validates from the pipeline seed and has no val seed key), so every
 * evaluation plays NEW states, identical across runs (docs/numerics.md §3). With val_env_manager.fixed_states
 * (starpo's own) validation seeds are (seed, "val", g): every evaluation plays the same held-out
 * states with the same sampling streams, so points of the validation curve are compared on one set
 * with common random numbers. A group's `stream` seeds its members' sampling streams the same way.
 */
export function planShards(config: RunConfig, split: 'train' | 'val', step: number): RolloutGroup[][] {
  const manager = split === 'train' ? config.train_env_manager : config.val_env_manager;
  const batch = split === 'train' ? config.rollout_batch_size : config.val_batch_size;
  const nGroups = batch / manager.group_size;
  const stream = split === 'val' && manager.fixed_states ? [config.seed, split] : [config.seed, split, step];
  const groups: RolloutGroup[] = [];
  for (let g = 0; g < nGroups; g++) {
    const envGroup = g % manager.num_env_groups;
    const tag = tagOfEnvGroup(manager.tags, manager.num_groups_partition, envGroup);
    groups.push(rolloutGroup(tag, g, Math.floor(g / manager.num_env_groups), deriveSeed(...stream, g), stream));
  }
  const perShard = manager.max_env_num_per_worker > 0 ? manager.max_env_num_per_worker / envsPerGroup(manager) : nGroups;
  const shards: RolloutGroup[][] = [];
  for (let i = 0; i < groups.length; i += perShard) shards.push(groups.slice(i, i + perShard));
  return shards;
}

/**
 * The config with `episodes` validation episodes (`starpo eval --episodes`): val_batch_size =
 * episodes, so val_batch_size / val_env_manager.group_size groups are played; group g keeps its tag
 * (env group g mod num_env_groups) and seed, so a larger count plays the same groups plus new ones.
 * @throws ConfigError (source `--episodes`) unless episodes is a positive multiple of the val group_size.
 */
export function withValEpisodes(config: RunConfig, episodes: number): RunConfig {
  const groupSize = config.val_env_manager.group_size;
  if (!Number.isInteger(episodes) || episodes < groupSize || episodes % groupSize !== 0) {
    throw new ConfigError('--episodes', [
      `${episodes} is not a positive multiple of val_env_manager.group_size (${groupSize}); allowed: k * ${groupSize} for k = 1, 2, ... (val groups x group_size)`,
    ]);
  }
  return { ...config, val_batch_size: episodes };
}
