/**
 * The env pool of one rollout activity (SPEC.md §3): plays whole env groups and
 * returns only complete groups, whatever the envs do.
 * - group_size_redundancy (ROLL EnvManagerConfig): each group runs group_size + redundancy envs and
 *   keeps the first group_size finishers, fewest lockstep turns first, ties by env id; the others are
 *   stopped once enough have finished and are dropped before the trajectories are stored.
 * - A failed episode (its env threw in reset or step, or its env time went over the tag's
 *   episode_timeout_seconds) fails its WHOLE group, which is replaced by a fresh group with a seed
 *   derived from the old one (plan.ts replacementGroup), up to MAX_GROUP_ATTEMPTS plays in all; then
 *   the group is dropped. Failures are counted and their messages returned, never thrown.
 */
import type { EpisodeOutcome, ManagerOptions } from './manager';
import { playEpisodes } from './manager';
import { replacementGroup, type RolloutGroup } from './plan';
import type { Trajectory } from './types';

/** Plays of one group before it is dropped: the first one and up to two replacements. */
export const MAX_GROUP_ATTEMPTS = 3;

/** What the pool did besides playing: the counts become env/* metrics (totals per step). */
export interface PoolStats {
  /** Episodes whose env threw or ran over its time budget. */
  failedEpisodes: number;
  /** Groups played again from a fresh seed after a failure. */
  replacedGroups: number;
  /** Groups given up after MAX_GROUP_ATTEMPTS failed plays (not in the batch). */
  droppedGroups: number;
}

/** Output of runGroups. */
export interface PoolResult {
  /** group_size trajectories per kept group, groups in input order, members by env id. */
  trajectories: Trajectory[];
  stats: PoolStats;
  /** One message per failed episode: tag, env id, group, seed and what went wrong. */
  errors: string[];
}

/** Group sizes of the env manager that planned the groups. */
export interface PoolOptions extends ManagerOptions {
  groupSize: number;
  /** group_size_redundancy: extra envs per group. */
  redundancy: number;
}

/** The kept members of a group whose play did not fail: the first groupSize finishers. */
function firstFinishers(outcomes: EpisodeOutcome[], groupSize: number): Trajectory[] {
  return outcomes
    .filter((o) => o.status === 'finished')
    .sort((a, b) => a.endedAt - b.endedAt || a.trajectory.envId - b.trajectory.envId)
    .slice(0, groupSize)
    .map((o) => o.trajectory)
    .sort((a, b) => a.envId - b.envId);
}

/**
 * Plays the groups; member j of group g has env id g * (groupSize + redundancy) + j and samples
 * from Rng(...group.stream, envId). Replacement plays run as later lockstep batches.
 * @throws only what playEpisodes throws for a bad config (never for an env failure)
 */
export async function runGroups(groups: RolloutGroup[], opts: PoolOptions): Promise<PoolResult> {
  const perGroup = opts.groupSize + opts.redundancy;
  const kept: Trajectory[][] = groups.map(() => []);
  const stats: PoolStats = { failedEpisodes: 0, replacedGroups: 0, droppedGroups: 0 };
  const errors: string[] = [];
  let pending = groups.map((group, index) => ({ group, index, attempt: 1 }));
  while (pending.length > 0) {
    const specs = pending.flatMap(({ group }) =>
      Array.from({ length: perGroup }, (_, j) => {
        const envId = group.groupId * perGroup + j;
        return { tag: group.tag, groupId: group.groupId, envId, seed: group.seed, trajGroupId: group.trajGroupId, rngParts: [...group.stream, envId] };
      }),
    );
    const outcomes = await playEpisodes(specs, opts, opts.groupSize);
    const next: typeof pending = [];
    pending.forEach((p, k) => {
      const mine = outcomes.slice(k * perGroup, (k + 1) * perGroup);
      const failures = mine.filter((o) => o.status === 'failed');
      if (failures.length === 0) {
        kept[p.index] = firstFinishers(mine, opts.groupSize);
        return;
      }
      stats.failedEpisodes += failures.length;
      errors.push(...failures.map((o) => o.error!));
      if (p.attempt < MAX_GROUP_ATTEMPTS) {
        stats.replacedGroups++;
        next.push({ group: replacementGroup(p.group), index: p.index, attempt: p.attempt + 1 });
      } else stats.droppedGroups++;
    });
    pending = next;
  }
  return { trajectories: kept.flat(), stats, errors };
}
