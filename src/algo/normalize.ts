/**
 * Episode-score normalisation within groups (SPEC.md §5.1; ROLL roll/pipeline/agentic/utils.py
 * compute_discounted_returns / agentic reward normalisation with reward_normalization.{grouping,method}).
 */

/** reward_normalization.method values (SPEC.md §2, §5.1). asym_clip behaves as mean_std. */
export const NORM_METHODS = ['identity', 'mean', 'mean_std', 'asym_clip'] as const;
/** One of NORM_METHODS. */
export type NormMethod = (typeof NORM_METHODS)[number];

/** Added to the std in the denominator (SPEC.md §5.1). */
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
 * Normalises episode scores within groups.
 * identity: r = s. mean: r = s - mu_g. mean_std / asym_clip: r = (s - mu_g) / (sigma_g + 1e-6) with the
 * unbiased std; a singleton group or sigma_g <= 1e-6 gives r = 0 for the whole group. Then, when
 * rewardClip is set, r = clamp(r, -rewardClip, rewardClip).
 * @param scores [B] episode scores (env reward units), finite
 * @param groupKeys [B] group key per trajectory (e.g. traj_group_id; one shared key = grouping "batch")
 * @param method reward_normalization.method
 * @param rewardClip reward_clip (> 0) or null/undefined for none
 * @returns [B] normalised scores, in the input order
 * @throws RangeError on a length mismatch, a non-finite score, an unknown method or a bad rewardClip.
 */
export function normalizeScores(
  scores: readonly number[], groupKeys: readonly string[], method: NormMethod, rewardClip?: number | null,
): number[] {
  if (scores.length !== groupKeys.length) {
    throw new RangeError(`normalizeScores: scores has ${scores.length} entries but groupKeys has ${groupKeys.length}; they must match`);
  }
  if (!NORM_METHODS.includes(method)) {
    throw new RangeError(`normalizeScores: reward_normalization.method "${String(method)}" is not known; allowed: ${NORM_METHODS.join(', ')}`);
  }
  if (rewardClip !== undefined && rewardClip !== null && !(rewardClip > 0 && Number.isFinite(rewardClip))) {
    throw new RangeError(`normalizeScores: reward_clip must be a positive finite number or null, got ${rewardClip}`);
  }
  scores.forEach((s, i) => {
    if (!Number.isFinite(s)) throw new RangeError(`normalizeScores: scores[${i}] must be finite, got ${s}`);
  });
  const out = scores.slice();
  if (method !== 'identity') {
    const useStd = method === 'mean_std' || method === 'asym_clip';
    for (const idx of groupIndices(groupKeys).values()) {
      const vals = idx.map((i) => scores[i]);
      const mu = mean(vals);
      const sigma = unbiasedStd(vals);
      const flat = useStd && (idx.length < 2 || sigma <= NORM_STD_EPS);
      for (const i of idx) {
        out[i] = flat ? 0 : useStd ? (scores[i] - mu) / (sigma + NORM_STD_EPS) : scores[i] - mu;
      }
    }
  }
  if (rewardClip !== undefined && rewardClip !== null) {
    for (let i = 0; i < out.length; i++) out[i] = Math.min(rewardClip, Math.max(-rewardClip, out[i]));
  }
  return out;
}
