/**
 * StarPO-S variance filtering of whole env groups before the update (docs/numerics.md §7; RAGEN arXiv 2504.20073 §4 and
 * RAGEN-2 arXiv 2604.06268). Source: RAGEN ragen/trainer/rollout_filter.py (RolloutFilter._select_top_groups,
 * RewardRolloutFilter with metric reward_variance, whose per-group score is the in-group std) and the older
 * ragen/trainer/agent_trainer.py _filter_rollout (same top-k rule and rollout/* metric names).
 */
import { FILTER_TYPES, type FilterType, type RunConfig, type Trajectory } from '../contract';
import { type StrategyOptions, selectGroups, ZERO_SCORE } from './filter_strategies';
import { groupIndices, mean, NORM_STD_EPS, unbiasedStd } from './normalize';

export { FILTER_TYPES, type FilterType };

/** RAGEN's default rollout_filter_selection_eps of the top-p rule. */
export const TOP_P_SELECTION_EPS = 0.01;

/** Inputs of filterGroups. */
export interface FilterInput {
  /** [B] raw episode scores (before normalisation). */
  scores: readonly number[];
  /** [B] group key per trajectory (traj_group_id). */
  groupKeys: readonly string[];
  type: FilterType;
  /** rollout_filter_ratio in (0, 1]: the fraction of groups (std, std_rev) or the std mass p (top_p). */
  ratio: number;
  /** top_p only: subtracted from the threshold p * sum(U) (RAGEN rollout_filter_selection_eps, default 0.01). */
  selectionEps?: number;
  /** RAGEN-2's rollout_filter_strategy and its keys: select by them (filter_strategies.ts) instead of `ratio`; `type` says largest or smallest. */
  strategy?: Omit<StrategyOptions, 'largest'>;
}

/** Result of filterGroups. */
export interface FilterOutput {
  /** Indices of the kept trajectories, ascending. */
  keep: number[];
  /** rollout/* metrics (see filterGroups). */
  metrics: Record<string, number>;
  /** Why nothing is kept (skip the update and log it), else null. */
  skipReason: string | null;
}

/**
 * Keeps whole groups by U = the unbiased (N-1) std of their raw episode scores (torch .std(); 0 for a singleton).
 * - std / std_rev: the k = max(1, floor(ratio * G)) groups with the highest / lowest U, G = number of groups
 *   (RAGEN `int(rollout_filter_ratio * num_groups)`, at least 1); ties go to the earlier group (first-seen
 *   order), so the choice is deterministic. ratio 1 keeps every group.
 * - top_p (RAGEN-2, RAGEN's "linear" top-p with include_zero False): drop groups with U <= 1e-6 (variance
 *   <= 1e-12, the normaliser's flat-group rule); sort the rest by U descending (ties: group order); threshold
 *   = ratio * sum(U) - selectionEps; add groups while the running sum of U is below the threshold (so the group
 *   that crosses it is kept). ratio 1 keeps every group with U > 1e-6. Nothing is kept when every group is flat,
 *   or when ratio * sum(U) <= selectionEps (a batch whose total in-group std is negligible).
 * - with `strategy` (RAGEN-2's rollout_filter_strategy): filter_strategies.ts selectGroups; nothing kept is a skip.
 * largest / smallest are RAGEN-2's names of std / std_rev.
 * Metrics: rollout/in_group_std, rollout/in_group_mean, rollout/in_group_max (means over all groups of the group
 * std, mean, max), rollout/chosen_in_group_{std,mean,max} (over kept groups; 0 when none), rollout/kept_groups,
 * rollout/kept_trajectories, rollout/filter_ratio_effective (kept groups / G), and RAGEN-2's
 * rollout/filter_kept_count, rollout/filter_kept_ratio, rollout/filter_zero_count (groups with U <= 1e-10).
 * @throws RangeError on a length mismatch, an empty batch, a non-finite score, an unknown type, a ratio outside
 *   (0, 1] or a negative selectionEps.
 */
export function filterGroups(input: FilterInput): FilterOutput {
  const { scores, groupKeys, type, ratio } = input;
  const eps = input.selectionEps ?? TOP_P_SELECTION_EPS;
  if (scores.length !== groupKeys.length) {
    throw new RangeError(`filterGroups: scores has ${scores.length} entries but groupKeys has ${groupKeys.length}; they must match`);
  }
  if (scores.length === 0) throw new RangeError('filterGroups: the batch has no trajectories');
  scores.forEach((s, i) => {
    if (!Number.isFinite(s)) throw new RangeError(`filterGroups: scores[${i}] must be finite, got ${s}`);
  });
  if (!FILTER_TYPES.includes(type)) {
    throw new RangeError(`filterGroups: rollout_filter_type "${String(type)}" is not known; allowed: ${FILTER_TYPES.join(', ')}`);
  }
  if (!(ratio > 0 && ratio <= 1)) throw new RangeError(`filterGroups: rollout_filter_ratio = ${ratio}; allowed: (0, 1]`);
  if (!(eps >= 0 && Number.isFinite(eps))) throw new RangeError(`filterGroups: selectionEps = ${eps}; allowed: a finite number >= 0`);

  const groups = [...groupIndices(groupKeys).values()].map((idx) => {
    const vals = idx.map((i) => scores[i]);
    return { idx, std: unbiasedStd(vals), mean: mean(vals), max: Math.max(...vals) };
  });
  const G = groups.length;
  // Array.prototype.sort is stable: equal U keep the first-seen group order.
  const byStd = (dir: 1 | -1) => [...groups].sort((a, b) => dir * (b.std - a.std));

  let kept: typeof groups;
  let skipReason: string | null = null;
  const largest = type !== 'std_rev' && type !== 'smallest';
  if (input.strategy) {
    const st = input.strategy;
    kept = selectGroups(
      groups.map((g) => g.std),
      { ...st, largest },
    ).map((i) => groups[i]);
    if (kept.length === 0) {
      skipReason = `rollout_filter_strategy ${st.strategy} ${st.value} (${largest ? 'largest' : 'smallest'}, include_zero ${st.includeZero}) kept none of the ${G} groups (${groups.filter((g) => g.std <= ZERO_SCORE).length} with zero reward variance)`;
    }
  } else if (type !== 'top_p') {
    kept = byStd(largest ? 1 : -1).slice(0, Math.max(1, Math.floor(ratio * G)));
  } else {
    const live = byStd(1).filter((g) => g.std > NORM_STD_EPS);
    const mass = ratio * live.reduce((s, g) => s + g.std, 0);
    kept = [];
    let cum = 0;
    for (const g of live) {
      if (ratio < 1 && cum >= mass - eps) break;
      kept.push(g);
      cum += g.std;
    }
    if (kept.length === 0) {
      skipReason =
        live.length === 0
          ? `all ${G} groups have zero reward variance (in-group std <= ${NORM_STD_EPS})`
          : `top_p ${ratio}: ratio * total in-group std of the ${live.length} of ${G} groups with nonzero variance is ${mass}, not above selection eps ${eps}`;
    }
  }

  const avg = (gs: typeof groups, f: (g: (typeof groups)[number]) => number) => (gs.length > 0 ? mean(gs.map(f)) : 0);
  const keep = kept.flatMap((g) => g.idx).sort((a, b) => a - b);
  const metrics = {
    'rollout/in_group_std': avg(groups, (g) => g.std),
    'rollout/in_group_mean': avg(groups, (g) => g.mean),
    'rollout/in_group_max': avg(groups, (g) => g.max),
    'rollout/chosen_in_group_std': avg(kept, (g) => g.std),
    'rollout/chosen_in_group_mean': avg(kept, (g) => g.mean),
    'rollout/chosen_in_group_max': avg(kept, (g) => g.max),
    'rollout/kept_groups': kept.length,
    'rollout/kept_trajectories': keep.length,
    'rollout/filter_ratio_effective': kept.length / G,
    // RAGEN-2's names for the same counts, and its count of zero-variance groups
    'rollout/filter_kept_count': kept.length,
    'rollout/filter_kept_ratio': kept.length / G,
    'rollout/filter_zero_count': groups.filter((g) => g.std <= ZERO_SCORE).length,
  };
  return { keep, metrics, skipReason };
}

/** filterGroups' input for a batch under the run config's rollout_filter_* keys (the strategy only when set). */
export function filterOptions(config: RunConfig, trajectories: readonly Pick<Trajectory, 'episodeScore' | 'trajGroupId'>[]): FilterInput {
  const strategy = config.rollout_filter_strategy;
  return {
    scores: trajectories.map((t) => t.episodeScore),
    groupKeys: trajectories.map((t) => t.trajGroupId),
    type: config.rollout_filter_type,
    ratio: config.rollout_filter_ratio,
    selectionEps: config.rollout_filter_selection_eps,
    strategy: strategy
      ? {
          strategy,
          value: config.rollout_filter_value,
          includeZero: config.rollout_filter_include_zero,
          topPProbMode: config.rollout_filter_top_p_prob_mode,
          selectionEps: config.rollout_filter_selection_eps,
        }
      : undefined,
  };
}
