/**
 * Per-trajectory metrics averaged over a batch, with ROLL's names (SPEC.md §4, DESIGN.md Names):
 * env/{tag}/success, env/{tag}/num_actions, env/{tag}/action_is_valid, env/{tag}/action_is_effective,
 * env/{tag}/score, env/response_length; validation prefixes them with "val/".
 */
import type { Trajectory } from './types';

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
    'env/success': t.success ? 1 : 0,
    'env/score': t.episodeScore,
    'env/response_length': t.responseMask.reduce((a, b) => a + b, 0),
    'env/sequence_length': t.inputIds.length,
  };
}

/** Running sums of metrics that can be merged across shards: mean = sum / count per key. */
export interface MetricSums {
  sums: Record<string, number>;
  counts: Record<string, number>;
}

/** Sums the metrics of a list of trajectories. */
export function sumMetrics(trajectories: Trajectory[]): MetricSums {
  const out: MetricSums = { sums: {}, counts: {} };
  for (const t of trajectories) {
    for (const [k, v] of Object.entries(trajectoryMetrics(t))) {
      out.sums[k] = (out.sums[k] ?? 0) + v;
      out.counts[k] = (out.counts[k] ?? 0) + 1;
    }
  }
  return out;
}

/** Merges shard sums (pure arithmetic; safe inside the workflow). */
export function mergeSums(parts: MetricSums[]): MetricSums {
  const out: MetricSums = { sums: {}, counts: {} };
  for (const p of parts) {
    for (const k of Object.keys(p.sums)) {
      out.sums[k] = (out.sums[k] ?? 0) + p.sums[k];
      out.counts[k] = (out.counts[k] ?? 0) + p.counts[k];
    }
  }
  return out;
}

/** Means of merged sums, keys prefixed (e.g. "val/"). */
export function meanMetrics(s: MetricSums, prefix = ''): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(s.sums)) out[prefix + k] = s.sums[k] / s.counts[k];
  return out;
}
