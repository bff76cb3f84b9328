/**
 * Rollout metrics with ROLL's names (docs/numerics.md §4 and Metrics). Per trajectory, averaged over the
 * batch: env/{tag}/success, env/{tag}/num_actions, env/{tag}/action_is_valid,
 * env/{tag}/action_is_effective, env/{tag}/score, env/response_length; and env/{tag}/truncated with its
 * two causes, env/{tag}/truncated_by_turn_cap and env/{tag}/truncated_by_length (starpo's names: ROLL
 * records the cause as an EpisodeStopReason but logs no metric of it). Per group (validation, ROLL
 * agentic_pipeline.py val()): {tag}/score and score, the mean over groups of the group's mean episode
 * score. Totals summed over the shards of a step: the pool's env/failed_episodes,
 * env/replaced_groups, env/dropped_groups. Validation prefixes every name with "val/".
 */
import type { MetricSums, Trajectory } from '../contract';

/** Mean of per-turn flags of one trajectory (0 when it has no turns). */
function turnMean(t: Trajectory, pick: (turn: Trajectory['turns'][number]) => boolean): number {
  return t.turns.length === 0 ? 0 : t.turns.filter(pick).length / t.turns.length;
}

/** Scalar metrics of one trajectory, keyed by metric name (tag-specific names included). */
export function trajectoryMetrics(t: Trajectory): Record<string, number> {
  const tag = t.tag;
  return {
    [`env/${tag}/success`]: t.success ? 1 : 0,
    [`env/${tag}/score`]: t.episodeScore,
    [`env/${tag}/num_actions`]: t.turns.length,
    [`env/${tag}/action_is_valid`]: turnMean(t, (u) => u.actionIsValid),
    [`env/${tag}/action_is_effective`]: turnMean(t, (u) => u.actionIsEffective),
    [`env/${tag}/truncated`]: t.truncated ? 1 : 0,
    [`env/${tag}/truncated_by_turn_cap`]: t.truncatedBy === 'max_steps' ? 1 : 0,
    [`env/${tag}/truncated_by_length`]: t.truncatedBy === 'max_length' ? 1 : 0,
    'env/success': t.success ? 1 : 0,
    'env/score': t.episodeScore,
    'env/response_length': t.responseMask.reduce((a, b) => a + b, 0),
    'env/sequence_length': t.inputIds.length,
  };
}

/** What sumMetrics adds besides the per-trajectory metrics. */
export interface SumOptions {
  /** Event counts of the shard, reported as totals. */
  totals?: Record<string, number>;
  /** Add {tag}/score and score over per-group mean episode scores (validation). */
  groupScores?: boolean;
}

/** Sums the metrics of a list of trajectories (one shard). */
export function sumMetrics(trajectories: Trajectory[], opts: SumOptions = {}): MetricSums {
  const out: MetricSums = { sums: {}, counts: {}, totals: { ...opts.totals } };
  const add = (k: string, v: number) => {
    out.sums[k] = (out.sums[k] ?? 0) + v;
    out.counts[k] = (out.counts[k] ?? 0) + 1;
  };
  for (const t of trajectories) for (const [k, v] of Object.entries(trajectoryMetrics(t))) add(k, v);
  if (opts.groupScores) {
    const groups = new Map<string, Trajectory[]>();
    for (const t of trajectories) groups.set(t.trajGroupId, [...(groups.get(t.trajGroupId) ?? []), t]);
    for (const members of groups.values()) {
      const mean = members.reduce((a, t) => a + t.episodeScore, 0) / members.length;
      add(`${members[0].tag}/score`, mean);
      add('score', mean);
    }
  }
  return out;
}

/** Merges shard sums (pure arithmetic; safe inside the workflow). */
export function mergeSums(parts: MetricSums[]): MetricSums {
  const out: MetricSums = { sums: {}, counts: {}, totals: {} };
  for (const p of parts) {
    for (const k of Object.keys(p.sums)) {
      out.sums[k] = (out.sums[k] ?? 0) + p.sums[k];
      out.counts[k] = (out.counts[k] ?? 0) + p.counts[k];
    }
    for (const [k, v] of Object.entries(p.totals)) out.totals[k] = (out.totals[k] ?? 0) + v;
  }
  return out;
}

/** Means of merged sums and the totals, keys prefixed (e.g. "val/"). */
export function meanMetrics(s: MetricSums, prefix = ''): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(s.sums)) out[prefix + k] = s.sums[k] / s.counts[k];
  for (const [k, v] of Object.entries(s.totals)) out[prefix + k] = v;
  return out;
}
