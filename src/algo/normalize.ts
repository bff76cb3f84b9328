/**
 * Episode-score normalisation within groups (docs/numerics.md §5.1), as ROLL's agentic_reward_norm
 * (roll/pipeline/agentic/utils.py) with RewardNormalizationConfig's norm_mean_type / norm_std_type
 * (roll/pipeline/agentic/agentic_config.py); the deprecated `method` only fills the types left null.
 */

import {
  NORM_METHODS,
  NORM_TYPES,
  type NormMethod,
  type NormType,
  type NormTypes,
  normTypesOf,
  type RewardNormKeys,
  resolveNormTypes,
} from '../contract';

export { NORM_METHODS, NORM_TYPES, type NormMethod, type NormType, type NormTypes, normTypesOf, type RewardNormKeys, resolveNormTypes };

/** Added to the std in the denominator (§5.1). */
export const NORM_STD_EPS = 1e-6;

/** Sample mean of a non-empty list. */
export function mean(xs: readonly number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

/** Unbiased (N-1) standard deviation; 0 for fewer than two values. */
export function unbiasedStd(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const mu = mean(xs);
  let ss = 0;
  for (const x of xs) ss += (x - mu) * (x - mu);
  return Math.sqrt(ss / (xs.length - 1));
}

/** Indices of each distinct key, in first-seen order. */
export function groupIndices(groupKeys: readonly string[]): Map<string, number[]> {
  const groups = new Map<string, number[]>();
  groupKeys.forEach((k, i) => {
    const g = groups.get(k);
    if (g) g.push(i);
    else groups.set(k, [i]);
  });
  return groups;
}

/**
 * Normalises episode scores as ROLL's agentic_reward_norm. The mean is the batch's (norm_mean_type batch),
 * the group's (group) or 0 (null); the std, unbiased, likewise or none. With a std: r = (s - mean) /
 * (std + 1e-6), and r = 0 for a whole group of one member or whose std is <= 1e-6 (ROLL tests the group's
 * size even when the std is the batch's). Without: r = s - mean. reward_clip is applied by the caller
 * (advantages.ts), to the normalised scores and again to the token rewards, as ROLL does.
 * @param scores [B] episode scores (env reward units), finite
 * @param groupKeys [B] group key per trajectory (e.g. traj_group_id; one shared key = grouping "batch")
 * @param norm the types in effect (resolveNormTypes)
 * @returns [B] normalised scores, in the input order
 * @throws RangeError on a length mismatch, a non-finite score or an unknown type.
 */
export function normalizeScores(scores: readonly number[], groupKeys: readonly string[], norm: NormTypes): number[] {
  if (scores.length !== groupKeys.length) {
    throw new RangeError(`normalizeScores: scores has ${scores.length} entries but groupKeys has ${groupKeys.length}; they must match`);
  }
  for (const key of ['norm_mean_type', 'norm_std_type'] as const) {
    if (norm[key] !== null && !NORM_TYPES.includes(norm[key])) {
      throw new RangeError(
        `normalizeScores: reward_normalization.${key} "${String(norm[key])}" is not known; allowed: ${NORM_TYPES.join(', ')} or null`,
      );
    }
  }
  scores.forEach((s, i) => {
    if (!Number.isFinite(s)) throw new RangeError(`normalizeScores: scores[${i}] must be finite, got ${s}`);
  });
  const batchMean = mean(scores);
  const batchStd = unbiasedStd(scores);
  const out = scores.slice();
  for (const idx of groupIndices(groupKeys).values()) {
    const vals = idx.map((i) => scores[i]);
    const mu = norm.norm_mean_type === 'batch' ? batchMean : norm.norm_mean_type === 'group' ? mean(vals) : 0;
    const sigma = norm.norm_std_type === 'batch' ? batchStd : norm.norm_std_type === 'group' ? unbiasedStd(vals) : null;
    const flat = sigma !== null && (idx.length < 2 || sigma <= NORM_STD_EPS);
    for (const i of idx) out[i] = flat ? 0 : sigma === null ? scores[i] - mu : (scores[i] - mu) / (sigma + NORM_STD_EPS);
  }
  return out;
}
