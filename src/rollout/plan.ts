/**
 * Which env groups a step plays, with which seeds, on which shard (SPEC.md §3). Pure and
 * deterministic, so the workflow calls it directly.
 *
 * A step plays rollout_batch_size / group_size groups (val: val_batch_size / group_size). Group g
 * takes the tag of env group (g mod num_env_groups) in the order of tags / num_groups_partition, and
 * its members have env ids g*group_size .. g*group_size+group_size-1. Train seeds are a pure function
 * of (seed, "train", step, g). Validation seeds are a function of (seed, "val", g) only: every
 * evaluation plays the SAME held-out states, so the warm-up and final checkpoints (and every point of
 * the validation curve) are compared on one set (a deliberate change from SPEC.md §3, which plays new
 * states each evaluation; see README). The rollout activity likewise samples validation episodes
 * from streams that do not depend on the step (common random numbers across evaluations).
 */
import type { RunConfig } from '../config/schema';
import { deriveSeed } from '../util/rng';

/** One env group of a rollout shard. */
export interface RolloutGroup {
  tag: string;
  groupId: number;
  /** Reset seed shared by the group's members (uint32). */
  seed: number;
  /** "{tag}_{group_id}_{episode}_{seed}" (SPEC.md §3). */
  trajGroupId: string;
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

/**
 * The groups of one step, split into shards of at most max_env_num_per_worker envs
 * (0 = one shard). Returns shards[k] = groups of shard k.
 */
export function planShards(config: RunConfig, split: 'train' | 'val', step: number): RolloutGroup[][] {
  const manager = split === 'train' ? config.train_env_manager : config.val_env_manager;
  const batch = split === 'train' ? config.rollout_batch_size : config.val_batch_size;
  const nGroups = batch / manager.group_size;
  const groups: RolloutGroup[] = [];
  for (let g = 0; g < nGroups; g++) {
    const envGroup = g % manager.num_env_groups;
    const episode = Math.floor(g / manager.num_env_groups);
    const tag = tagOfEnvGroup(manager.tags, manager.num_groups_partition, envGroup);
    const seed = split === 'train' ? deriveSeed(config.seed, 'train', step, g) : deriveSeed(config.seed, 'val', g);
    groups.push({ tag, groupId: g, seed, trajGroupId: `${tag}_${g}_${episode}_${seed}` });
  }
  const perShard = manager.max_env_num_per_worker > 0 ? manager.max_env_num_per_worker / manager.group_size : nGroups;
  const shards: RolloutGroup[][] = [];
  for (let i = 0; i < groups.length; i += perShard) shards.push(groups.slice(i, i + perShard));
  return shards;
}
