/**
 * From episode scores to per-token advantages (SPEC.md §5.2-5.5; ROLL roll/utils/functionals.py
 * compute_reinforce_return, masked_whiten, and roll/pipeline/agentic/utils.py compute_advantage).
 * Pure functions on plain arrays. Shapes: B trajectories, T = L-1 shifted positions; `mask[i][t]` is
 * 1 where token t+1 of trajectory i was sampled by the policy (the shifted response mask), else 0.
 */
import { normalizeScores, type NormMethod } from './normalize';

/** Floating guard of the whitening formula (SPEC.md §5.4). */
export const WHITEN_EPS = 1e-8;

function checkMatrix(name: string, m: readonly (readonly number[])[], B: number, T: number): void {
  if (m.length !== B) throw new RangeError(`${name} has ${m.length} rows; expected ${B} (one per trajectory)`);
  m.forEach((row, i) => {
    if (row.length !== T) throw new RangeError(`${name}[${i}] has length ${row.length}; expected ${T} (shifted length L-1)`);
  });
}

/**
 * Token-level rewards (SPEC.md §5.2): R[i][t] = 0 everywhere except R[i][lastIndex[i]] = normScores[i].
 * @param normScores [B] normalised episode scores
 * @param lastIndex [B] shifted slot of each trajectory's last sampled token, -1 when it has none (its
 *   score is then dropped)
 * @param T shifted length L-1
 * @returns [B][T] rewards
 * @throws RangeError on a length mismatch or a lastIndex outside [-1, T-1].
 */
export function tokenRewards(normScores: readonly number[], lastIndex: readonly number[], T: number): number[][] {
  if (normScores.length !== lastIndex.length) {
    throw new RangeError(`tokenRewards: normScores has ${normScores.length} entries, lastIndex ${lastIndex.length}; they must match`);
  }
  return normScores.map((r, i) => {
    const k = lastIndex[i];
    if (!Number.isInteger(k) || k < -1 || k >= T) throw new RangeError(`tokenRewards: lastIndex[${i}] = ${k}; allowed -1..${T - 1}`);
    const row = new Array<number>(T).fill(0);
    if (k >= 0) row[k] = r;
    return row;
  });
}

/**
 * REINFORCE returns (SPEC.md §5.3, ROLL compute_reinforce_return; grpo uses the same path):
 * G_t = R_t + gamma * G_{t+1} over ALL shifted positions, A = G. The mask does NOT reset the
 * recursion: in a multi-turn trajectory the prompt tokens between turns are masked, and earlier
 * turns must still receive the final reward. With gamma = 1 every position up to the last sampled
 * token gets the episode's normalised score. `mask` is used only to check shapes.
 * @param rewards [B][T] token rewards; @param mask [B][T] 0/1; @param gamma discount in [0, 1]
 * @returns [B][T] returns (= advantages, not yet masked)
 */
export function reinforceReturns(rewards: readonly (readonly number[])[], mask: readonly (readonly number[])[], gamma: number): number[][] {
  if (!(gamma >= 0 && gamma <= 1)) throw new RangeError(`reinforceReturns: gamma must be in [0, 1], got ${gamma}`);
  const T = rewards.length > 0 ? rewards[0].length : 0;
  checkMatrix('rewards', rewards, rewards.length, T);
  checkMatrix('mask', mask, rewards.length, T);
  return rewards.map((row) => {
    const out = new Array<number>(T).fill(0);
    let g = 0;
    for (let t = T - 1; t >= 0; t--) {
      g = row[t] + gamma * g;
      out[t] = g;
    }
    return out;
  });
}

/**
 * Turn-level returns for adv_estimator agentic_reinforce (SPEC.md §5.3): each maximal run of mask = 1
 * (one assistant turn) is a segment; going backwards, C <- R[end of segment] + gamma * C, and every
 * token of the segment gets C (0 elsewhere). With gamma = 1 and the reward on the last sampled token
 * this equals reinforceReturns * mask.
 * @param rewards [B][T]; @param mask [B][T] 0/1; @param gamma in [0, 1]
 * @returns [B][T] returns, 0 outside the mask
 */
export function agenticReinforceReturns(
  rewards: readonly (readonly number[])[], mask: readonly (readonly number[])[], gamma: number,
): number[][] {
  if (!(gamma >= 0 && gamma <= 1)) throw new RangeError(`agenticReinforceReturns: gamma must be in [0, 1], got ${gamma}`);
  const T = rewards.length > 0 ? rewards[0].length : 0;
  checkMatrix('rewards', rewards, rewards.length, T);
  checkMatrix('mask', mask, rewards.length, T);
  return rewards.map((row, i) => {
    const m = mask[i];
    const out = new Array<number>(T).fill(0);
    let c = 0;
    let t = T - 1;
    while (t >= 0) {
      if (m[t] <= 0) { t--; continue; }
      const end = t;
      while (t >= 0 && m[t] > 0) t--;
      c = row[end] + gamma * c;
      for (let k = t + 1; k <= end; k++) out[k] = c;
    }
    return out;
  });
}

/**
 * Global masked whitening (SPEC.md §5.4, ROLL masked_whiten with shift_mean=True):
 * n = sum m; mu = sum(A m)/(n + 1e-8); var = sum((A - mu)^2 m)/(n + 1e-8) * n/(n - 1);
 * A = (A - mu)/sqrt(var + 1e-8), mean not added back. Skipped when n <= 1. Then A = A * m (always).
 * @param adv [B][T]; @param mask [B][T] 0/1
 * @returns a new [B][T] array
 */
export function whiten(adv: readonly (readonly number[])[], mask: readonly (readonly number[])[]): number[][] {
  const T = adv.length > 0 ? adv[0].length : 0;
  checkMatrix('adv', adv, adv.length, T);
  checkMatrix('mask', mask, adv.length, T);
  let n = 0;
  let s = 0;
  adv.forEach((row, i) => row.forEach((a, t) => { n += mask[i][t]; s += a * mask[i][t]; }));
  if (n <= 1) return adv.map((row, i) => row.map((a, t) => a * mask[i][t]));
  const mu = s / (n + WHITEN_EPS);
  let ss = 0;
  adv.forEach((row, i) => row.forEach((a, t) => { ss += (a - mu) * (a - mu) * mask[i][t]; }));
  const variance = (ss / (n + WHITEN_EPS)) * (n / (n - 1));
  const scale = 1 / Math.sqrt(variance + WHITEN_EPS);
  return adv.map((row, i) => row.map((a, t) => (a - mu) * scale * mask[i][t]));
}

/**
 * Clamps every advantage to [-c, c] (SPEC.md §5.5, advantage_clip).
 * @param adv [B][T]; @param c > 0
 * @returns a new [B][T] array
 */
export function clipAdvantages(adv: readonly (readonly number[])[], c: number): number[][] {
  if (!(c > 0)) throw new RangeError(`clipAdvantages: advantage_clip must be a positive number, got ${c}`);
  return adv.map((row) => row.map((a) => Math.min(c, Math.max(-c, a))));
}

/** Estimators served by computeAdvantages (gae needs a critic, which arrives with issue 3). */
export const ADV_ESTIMATORS = ['reinforce', 'grpo', 'agentic_reinforce'] as const;

/** Inputs of computeAdvantages. See the individual functions for shapes. */
export interface AdvantageInput {
  scores: readonly number[];
  groupKeys: readonly string[];
  mask: readonly (readonly number[])[];
  lastIndex: readonly number[];
  method: NormMethod;
  gamma: number;
  whiten: boolean;
  rewardClip?: number | null;
  advantageClip?: number | null;
  advEstimator?: string;
}

/** Output of computeAdvantages: [B][T] advantages (0 on unmasked slots), [B] normalised scores, metrics. */
export interface AdvantageOutput {
  advantages: number[][];
  normalizedScores: number[];
  metrics: Record<string, number>;
}

function stats(xs: readonly number[]): { mean: number; max: number; min: number } {
  if (xs.length === 0) return { mean: 0, max: 0, min: 0 };
  let s = 0, mx = -Infinity, mn = Infinity;
  for (const x of xs) { s += x; mx = Math.max(mx, x); mn = Math.min(mn, x); }
  return { mean: s / xs.length, max: mx, min: mn };
}

/**
 * The StarPO advantage pipeline (SPEC.md §5): normalizeScores -> tokenRewards -> reinforceReturns
 * (agenticReinforceReturns for adv_estimator agentic_reinforce; default reinforce) ->
 * whiten (or just A*m) -> clipAdvantages. Metrics (SPEC.md §6): critic/score/{mean,max,min} (raw
 * scores), critic/rewards/{mean,max,min} (normalised, after reward_clip), critic/advantages/{mean,max,min}
 * (final values over masked tokens; 0 when there are none), critic/advantage_clip_frac (fraction of
 * masked tokens with |A| > advantage_clip before clipping; 0 without a clip).
 * @throws RangeError on shape mismatches, bad values, or an unsupported advEstimator.
 */
export function computeAdvantages(input: AdvantageInput): AdvantageOutput {
  const est = input.advEstimator ?? 'reinforce';
  if (!(ADV_ESTIMATORS as readonly string[]).includes(est)) {
    throw new RangeError(`computeAdvantages: adv_estimator "${String(est)}" is not supported here; allowed: ${ADV_ESTIMATORS.join(', ')}`);
  }
  const B = input.scores.length;
  const T = input.mask.length > 0 ? input.mask[0].length : 0;
  checkMatrix('mask', input.mask, B, T);
  const normalizedScores = normalizeScores(input.scores, input.groupKeys, input.method, input.rewardClip);
  const rewards = tokenRewards(normalizedScores, input.lastIndex, T);
  const returns = est === 'agentic_reinforce'
    ? agenticReinforceReturns(rewards, input.mask, input.gamma)
    : reinforceReturns(rewards, input.mask, input.gamma);
  let adv = input.whiten ? whiten(returns, input.mask) : returns.map((row, i) => row.map((a, t) => a * input.mask[i][t]));
  let clipped = 0;
  let nTok = 0;
  const c = input.advantageClip;
  adv.forEach((row, i) => row.forEach((a, t) => {
    if (input.mask[i][t] > 0) { nTok++; if (c !== undefined && c !== null && Math.abs(a) > c) clipped++; }
  }));
  if (c !== undefined && c !== null) adv = clipAdvantages(adv, c);
  const masked: number[] = [];
  adv.forEach((row, i) => row.forEach((a, t) => { if (input.mask[i][t] > 0) masked.push(a); }));
  const sc = stats(input.scores), rw = stats(normalizedScores), ad = stats(masked);
  const metrics: Record<string, number> = {
    'critic/score/mean': sc.mean, 'critic/score/max': sc.max, 'critic/score/min': sc.min,
    'critic/rewards/mean': rw.mean, 'critic/rewards/max': rw.max, 'critic/rewards/min': rw.min,
    'critic/advantages/mean': ad.mean, 'critic/advantages/max': ad.max, 'critic/advantages/min': ad.min,
    'critic/advantage_clip_frac': nTok > 0 ? clipped / nTok : 0,
  };
  return { advantages: adv, normalizedScores, metrics };
}
