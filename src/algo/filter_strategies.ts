/**
 * RAGEN-2's group selection (`rollout_filter_strategy`, docs/numerics.md §7): which env groups the variance
 * filter keeps, given each group's score U (the in-group std of raw episode scores, RAGEN's
 * `reward_variance` metric). Source: RAGEN ragen/trainer/rollout_filter.py, RolloutFilter._select_top_groups;
 * checked against values that function returns (test/fixtures/ragen/filter_cases.json).
 */
import type { FilterStrategy, TopPProbMode } from '../contract';

/** |U| at or below this is a zero-variance group (RAGEN's 1e-10). */
export const ZERO_SCORE = 1e-10;

/** How to select: RAGEN's rollout_filter_* keys. */
export interface StrategyOptions {
  strategy: FilterStrategy;
  /** rollout_filter_value: p (top_p), a fraction of the groups (top_k), a count (top_k_abs), a fraction of the best score (min_p). */
  value: number;
  /** rollout_filter_type largest (std) keeps high U; smallest (std_rev) keeps low U. */
  largest: boolean;
  /** rollout_filter_include_zero: false drops the groups with U = 0 before selecting. */
  includeZero: boolean;
  topPProbMode: TopPProbMode;
  /** rollout_filter_selection_eps (top_p linear). */
  selectionEps: number;
}

/** Candidate indices sorted by U (descending for largest); stable, so ties keep the group order. */
function ranked(scores: readonly number[], candidates: readonly number[], descending: boolean): number[] {
  return [...candidates].sort((a, b) => (descending ? scores[b] - scores[a] : scores[a] - scores[b]));
}

/**
 * The groups kept, as indices into `scores` (one U per group), in RAGEN's selection order; [] when the rule keeps
 * none (top_p linear that cannot reach its threshold, or every group at U = 0 with include_zero false).
 */
export function selectGroups(scores: readonly number[], o: StrategyOptions): number[] {
  const G = scores.length;
  const candidates = [...scores.keys()].filter((i) => o.includeZero || Math.abs(scores[i]) > ZERO_SCORE);
  if (candidates.length === 0) return [];
  const n = candidates.length;
  switch (o.strategy) {
    case 'top_p': {
      if (o.value >= 1) return candidates;
      if (o.topPProbMode === 'softmax') {
        // Nucleus over softmax(U) (or softmax(-U) for smallest): the fewest groups whose probability mass reaches p.
        const logits = candidates.map((i) => (o.largest ? scores[i] : -scores[i]));
        const top = Math.max(...logits);
        const w = logits.map((l) => Math.exp(l - top));
        const z = w.reduce((a, b) => a + b, 0);
        const order = [...candidates.keys()].sort((a, b) => w[b] - w[a]);
        let mass = 0;
        let k = 0;
        while (k < n) {
          mass += w[order[k]] / z;
          k++;
          if (mass >= o.value) break;
        }
        return order.slice(0, k).map((j) => candidates[j]);
      }
      // linear: add groups in order while the running sum of U is below p * sum(U) - eps; a U <= 0 ends the run.
      const order = ranked(scores, candidates, o.largest);
      const threshold = o.value * candidates.reduce((a, i) => a + scores[i], 0) - o.selectionEps;
      let sum = 0;
      let count = 0;
      for (const i of order) {
        if (sum >= threshold || scores[i] <= 0) break;
        sum += scores[i];
        count++;
      }
      return sum >= threshold ? order.slice(0, count) : [];
    }
    case 'top_k':
    case 'top_k_abs': {
      const k = Math.max(1, Math.min(Math.floor(o.strategy === 'top_k' ? o.value * G : o.value), n));
      return ranked(scores, candidates, o.largest).slice(0, k);
    }
    case 'min_p': {
      const us = candidates.map((i) => scores[i]);
      const keep = o.largest
        ? (u: number) => u >= Math.max(...us) * o.value - 1e-10
        : (u: number) => u <= Math.min(...us) / (o.value + 1e-10) + 1e-10;
      return candidates.filter((i) => keep(scores[i]));
    }
  }
}

/** filter_loss_scaling: the factor the advantages are multiplied by when a fraction `keptRatio` of the groups is kept. */
export function filterLossScale(scaling: 'none' | 'linear' | 'sqrt', keptRatio: number): number {
  return scaling === 'linear' ? keptRatio : scaling === 'sqrt' ? Math.sqrt(keptRatio) : 1;
}
