/**
 * From normalised episode scores to per-token advantages (docs/numerics.md §5.1 reward_clip to §5.5; ROLL
 * roll/utils/functionals.py compute_reinforce_return, compute_gae_advantage_return, masked_whiten,
 * compute_token_reward and compute_advantage). Pure functions on plain arrays. Shapes: B trajectories, T = L-1
 * shifted positions; `mask[i][t]` is 1 where token t+1 of trajectory i was sampled by the policy, else 0.
 */
import { ADV_ESTIMATORS } from '../contract';

/** Floating guard of the whitening formula (§5.4). */
export const WHITEN_EPS = 1e-8;

function checkMatrix(name: string, m: readonly (readonly number[])[], B: number, T: number): void {
  if (m.length !== B) throw new RangeError(`${name} has ${m.length} rows; expected ${B} (one per trajectory)`);
  m.forEach((row, i) => {
    if (row.length !== T) throw new RangeError(`${name}[${i}] has length ${row.length}; expected ${T} (shifted length L-1)`);
  });
}

/** Checks that every named [B][T] matrix has the shape of the first one; returns its T. */
function sameShape(ms: Record<string, readonly (readonly number[])[]>): number {
  const first = Object.values(ms)[0];
  const T = first.length > 0 ? first[0].length : 0;
  for (const [name, m] of Object.entries(ms)) checkMatrix(name, m, first.length, T);
  return T;
}

/**
 * Token-level rewards (§5.2): R[i][t] = 0 everywhere except R[i][lastIndex[i]] = normScores[i].
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
 * REINFORCE returns (§5.3, ROLL compute_reinforce_return; grpo uses the same path):
 * G_t = R_t + gamma * G_{t+1} over ALL shifted positions, A = G. The mask does NOT reset the
 * recursion: in a multi-turn trajectory the prompt tokens between turns are masked, and earlier
 * turns must still receive the final reward. With gamma = 1 every position up to the last sampled
 * token gets the episode's normalised score. `mask` is used only to check shapes.
 * @param rewards [B][T] token rewards; @param mask [B][T] 0/1; @param gamma discount in [0, 1]
 * @returns [B][T] returns (= advantages, not yet masked)
 */
export function reinforceReturns(rewards: readonly (readonly number[])[], mask: readonly (readonly number[])[], gamma: number): number[][] {
  checkUnit('reinforceReturns', 'gamma', gamma);
  const T = sameShape({ rewards, mask });
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
 * Turn-level returns for adv_estimator agentic_reinforce (§5.3): each maximal run of mask = 1
 * (one assistant turn) is a segment; going backwards, C <- R[end of segment] + gamma * C, and every
 * token of the segment gets C (0 elsewhere). With gamma = 1 and the reward on the last sampled token
 * this equals reinforceReturns * mask.
 * @param rewards [B][T]; @param mask [B][T] 0/1; @param gamma in [0, 1]
 * @returns [B][T] returns, 0 outside the mask
 */
export function agenticReinforceReturns(
  rewards: readonly (readonly number[])[],
  mask: readonly (readonly number[])[],
  gamma: number,
): number[][] {
  checkUnit('agenticReinforceReturns', 'gamma', gamma);
  const T = sameShape({ rewards, mask });
  return rewards.map((row, i) => {
    const m = mask[i];
    const out = new Array<number>(T).fill(0);
    let c = 0;
    let t = T - 1;
    while (t >= 0) {
      if (m[t] <= 0) {
        t--;
        continue;
      }
      const end = t;
      while (t >= 0 && m[t] > 0) t--;
      c = row[end] + gamma * c;
      for (let k = t + 1; k <= end; k++) out[k] = c;
    }
    return out;
  });
}

/**
 * Global masked whitening (§5.4, ROLL masked_whiten with shift_mean=True):
 * n = sum m; mu = sum(A m)/(n + 1e-8); var = sum((A - mu)^2 m)/(n + 1e-8) * n/(n - 1);
 * A = (A - mu)/sqrt(var + 1e-8), mean not added back. Skipped when n <= 1. Then A = A * m (always).
 * @param adv [B][T]; @param mask [B][T] 0/1
 * @returns a new [B][T] array
 */
export function whiten(adv: readonly (readonly number[])[], mask: readonly (readonly number[])[]): number[][] {
  sameShape({ adv, mask });
  let n = 0;
  let s = 0;
  adv.forEach((row, i) =>
    row.forEach((a, t) => {
      n += mask[i][t];
      s += a * mask[i][t];
    }),
  );
  if (n <= 1) return adv.map((row, i) => row.map((a, t) => a * mask[i][t]));
  const mu = s / (n + WHITEN_EPS);
  let ss = 0;
  adv.forEach((row, i) =>
    row.forEach((a, t) => {
      ss += (a - mu) * (a - mu) * mask[i][t];
    }),
  );
  const variance = (ss / (n + WHITEN_EPS)) * (n / (n - 1));
  const scale = 1 / Math.sqrt(variance + WHITEN_EPS);
  return adv.map((row, i) => row.map((a, t) => (a - mu) * scale * mask[i][t]));
}

/**
 * GAE advantages and returns (§5.3; ROLL roll/utils/functionals.py compute_gae_advantage_return, from
 * TRL's PPO trainer; Schulman et al. 2016, arXiv 1506.02438). As in ROLL the critic's values enter unmasked: the
 * observation tokens between turns and the position after the last token carry real values. Backwards over ALL
 * shifted positions: nextV = t + 1 < T ? V[t+1] : 0; delta = R[t] + gamma nextV - V[t];
 * lastgaelam = delta + gamma lambd lastgaelam; A[t] = lastgaelam; returns = A + V. Not masked afterwards.
 * @param rewards [B][T] token rewards (already masked); @param values [B][T] critic values V(state after token t)
 * @param gamma, lambd in [0, 1]
 * @returns advantages [B][T] and returns [B][T]
 * @throws RangeError on shape mismatches or gamma / lambd outside [0, 1].
 */
export function gaeAdvantages(
  rewards: readonly (readonly number[])[],
  values: readonly (readonly number[])[],
  gamma: number,
  lambd: number,
): { advantages: number[][]; returns: number[][] } {
  checkUnit('gaeAdvantages', 'gamma', gamma);
  checkUnit('gaeAdvantages', 'lambd', lambd);
  const T = sameShape({ rewards, values });
  const advantages: number[][] = [];
  const returns: number[][] = [];
  rewards.forEach((row, i) => {
    const v = values[i];
    const a = new Array<number>(T).fill(0);
    let last = 0;
    for (let t = T - 1; t >= 0; t--) {
      const delta = row[t] + gamma * (t + 1 < T ? v[t + 1] : 0) - v[t];
      last = delta + gamma * lambd * last;
      a[t] = last;
    }
    advantages.push(a);
    returns.push(a.map((x, t) => x + v[t]));
  });
  return { advantages, returns };
}

/**
 * Clamps every entry to [-c, c] and counts the entries outside it first (ROLL compute_clip_fraction + torch.clamp;
 * used for reward_clip, the token rewards and advantage_clip).
 * @param m [B][T]; @param c > 0; @param key the config key, for the error
 * @returns the clamped copy and the number of entries with |x| > c
 * @throws RangeError when c is not a positive finite number
 */
export function clipMatrix(m: readonly (readonly number[])[], c: number, key: string): { clipped: number[][]; count: number } {
  if (!(c > 0 && Number.isFinite(c))) throw new RangeError(`${key} must be a positive finite number or null, got ${c}`);
  let count = 0;
  const clipped = m.map((row) =>
    row.map((x) => {
      if (Math.abs(x) > c) count += 1;
      return Math.min(c, Math.max(-c, x));
    }),
  );
  return { clipped, count };
}

/** Inputs of computeAdvantages. Matrices are [B][T] on the shifted positions. */
export interface AdvantageInput {
  /** [B] raw episode scores (for the critic/score metrics). */
  scores: readonly number[];
  /** [B] the scores normalised within their groups (normalize.ts normalizeScores), before reward_clip. */
  normScores: readonly number[];
  /** [B][T] 0/1 shifted response mask. */
  mask: readonly (readonly number[])[];
  /** [B] shifted slot of each trajectory's last sampled token (-1: none). */
  lastIndex: readonly number[];
  gamma: number;
  /** GAE lambda; required for gae. */
  lambd?: number;
  whiten: boolean;
  rewardClip?: number | null;
  advantageClip?: number | null;
  /** One of ADV_ESTIMATORS; default reinforce. */
  advEstimator?: string;
  /** [B][T] critic values at rollout time; required for gae. */
  values?: readonly (readonly number[])[];
  /** [B][T] per-token KL of the old vs the reference policy (kl_penalty estimator), nats. */
  tokenKl?: readonly (readonly number[])[];
  /** beta of add_token_level_kl: when given (with tokenKl), R[t] -= beta * kl[t]. */
  klCoef?: number | null;
  /**
   * Shifted slots of each trajectory in ROLL, which pads every trajectory to sequence_length (so sequence_length - 1):
   * the clip fractions divide the clipped entries (all on sampled tokens) by B times this, as ROLL counts them in its
   * [B, sequence_length - 1] tensors. Default T.
   */
  slotsPerTrajectory?: number;
}

/**
 * Output of computeAdvantages: [B][T] advantages (0 on unmasked slots), [B][T] returns (the unwhitened
 * reinforce / agentic returns, or GAE's A + V for the critic; not masked), [B] normalised scores, metrics.
 */
export interface AdvantageOutput {
  advantages: number[][];
  returns: number[][];
  normalizedScores: number[];
  metrics: Record<string, number>;
}

function checkUnit(fn: string, name: string, x: number): void {
  if (!(x >= 0 && x <= 1)) throw new RangeError(`${fn}: ${name} must be in [0, 1], got ${x}`);
}

/** The entries of m where mask > 0, row by row. */
function maskedValues(m: readonly (readonly number[])[], mask: readonly (readonly number[])[]): number[] {
  return m.flatMap((row, i) => row.filter((_, t) => mask[i][t] > 0));
}

/** critic/{name}/{mean,max,min} of xs (all 0 when xs is empty). */
function statMetrics(name: string, xs: readonly number[]): Record<string, number> {
  let s = 0,
    mx = -Infinity,
    mn = Infinity;
  for (const x of xs) {
    s += x;
    mx = Math.max(mx, x);
    mn = Math.min(mn, x);
  }
  const n = xs.length;
  return { [`critic/${name}/mean`]: n ? s / n : 0, [`critic/${name}/max`]: n ? mx : 0, [`critic/${name}/min`]: n ? mn : 0 };
}

/**
 * ROLL's batch KL (compute_token_reward current_kl): the mean over trajectories of each one's masked token mean,
 * sum_t(kl m) / (sum_t m + 1e-8), a trajectory without sampled tokens counting as 0.
 */
function batchKl(kl: readonly (readonly number[])[], mask: readonly (readonly number[])[]): number {
  if (kl.length === 0) return 0;
  let total = 0;
  kl.forEach((row, i) => {
    let s = 0,
      n = 0;
    row.forEach((x, t) => {
      s += x * mask[i][t];
      n += mask[i][t];
    });
    total += n > 0 ? s / (n + WHITEN_EPS) : 0;
  });
  return total / kl.length;
}

/**
 * The StarPO advantage pipeline after normalisation (§5; ROLL roll/pipeline/agentic/utils.py
 * compute_response_level_rewards, roll/utils/functionals.py compute_token_reward, agentic_compute_advantage):
 * normalised scores -> reward_clip -> tokenRewards -> (R[t] -= klCoef * tokenKl[t] when klCoef is given) -> reward_clip again on every token reward -> R * m
 * -> reinforceReturns (reinforce, grpo; the default) / agenticReinforceReturns / gaeAdvantages (gae, with the unmasked
 * values and lambd) -> whiten (or just A*m) -> advantage_clip.
 * Metrics under ROLL's names (§6): critic/score/{mean,max,min} (raw scores); critic/rewards/{mean,max,min}
 * (per trajectory, the sum of its final token rewards); critic/advantages/{mean,max,min} and critic/returns/{mean,max,min}
 * over masked tokens; critic/reward_clip_frac (share of trajectories whose normalised score was clipped),
 * critic/token_reward_clip_frac and critic/advantage_clip_frac (clipped entries over B * slotsPerTrajectory, as ROLL
 * counts them in its padded tensors), each 0 when its clip is off; with gae critic/values/{mean,max,min} (masked
 * tokens); critic/kl with tokenKl (ROLL's batch KL: the mean over trajectories of the masked token mean of tokenKl; feed it
 * to KlController.update) and critic/kl_coef (the beta these rewards used: klCoef, or 0).
 * All 0 when there is no masked token.
 * @throws RangeError on shape mismatches (normScores must match scores) or bad values, an unknown advEstimator,
 *   gae without values or lambd, or klCoef without tokenKl.
 */
export function computeAdvantages(input: AdvantageInput): AdvantageOutput {
  const est = input.advEstimator ?? 'reinforce';
  if (!(ADV_ESTIMATORS as readonly string[]).includes(est)) {
    throw new RangeError(`computeAdvantages: adv_estimator "${String(est)}" is not supported here; allowed: ${ADV_ESTIMATORS.join(', ')}`);
  }
  const { mask } = input;
  const B = input.scores.length;
  if (input.normScores.length !== B) {
    throw new RangeError(`computeAdvantages: normScores has ${input.normScores.length} entries but scores has ${B}; they must match`);
  }
  const T = mask.length > 0 ? mask[0].length : 0;
  checkMatrix('mask', mask, B, T);
  const klCoef = input.klCoef ?? null;
  if (klCoef !== null && !input.tokenKl) throw new RangeError('computeAdvantages: klCoef is given but tokenKl is missing');
  if (klCoef !== null && !(klCoef >= 0 && Number.isFinite(klCoef)))
    throw new RangeError(`computeAdvantages: klCoef must be a finite number >= 0, got ${klCoef}`);
  if (input.tokenKl) checkMatrix('tokenKl', input.tokenKl, B, T);
  if (est === 'gae' && !input.values)
    throw new RangeError('computeAdvantages: adv_estimator gae needs the critic values ([B][T] `values`)');
  if (est === 'gae' && input.lambd === undefined) throw new RangeError('computeAdvantages: adv_estimator gae needs `lambd`');
  const slots = input.slotsPerTrajectory ?? T;
  if (!(Number.isInteger(slots) && slots > 0))
    throw new RangeError(`computeAdvantages: slotsPerTrajectory must be a positive integer, got ${slots}`);
  const numel = Math.max(B * slots, 1);
  const rewardClip = input.rewardClip ?? null;

  let normalizedScores = [...input.normScores];
  let rewardClipFrac = 0;
  let tokenRewardClipFrac = 0;
  if (rewardClip !== null) {
    const r = clipMatrix([normalizedScores], rewardClip, 'reward_clip');
    normalizedScores = r.clipped[0];
    rewardClipFrac = B > 0 ? r.count / B : 0;
  }
  let rewards = tokenRewards(normalizedScores, input.lastIndex, T);
  if (klCoef !== null) rewards = rewards.map((row, i) => row.map((r, t) => r - klCoef * input.tokenKl![i][t] * mask[i][t]));
  if (rewardClip !== null) {
    const r = clipMatrix(rewards, rewardClip, 'reward_clip');
    rewards = r.clipped;
    tokenRewardClipFrac = r.count / numel;
  }
  rewards = rewards.map((row, i) => row.map((r, t) => r * mask[i][t]));
  let returns: number[][];
  let raw: number[][];
  if (est === 'gae') {
    ({ advantages: raw, returns } = gaeAdvantages(rewards, input.values!, input.gamma, input.lambd!));
  } else {
    returns =
      est === 'agentic_reinforce' ? agenticReinforceReturns(rewards, mask, input.gamma) : reinforceReturns(rewards, mask, input.gamma);
    raw = returns;
  }
  let adv = input.whiten ? whiten(raw, mask) : raw.map((row, i) => row.map((a, t) => a * mask[i][t]));
  let advantageClipFrac = 0;
  if (input.advantageClip !== undefined && input.advantageClip !== null) {
    const r = clipMatrix(adv, input.advantageClip, 'advantage_clip');
    adv = r.clipped;
    advantageClipFrac = r.count / numel;
  }

  const metrics: Record<string, number> = {
    ...statMetrics('score', input.scores),
    ...statMetrics(
      'rewards',
      rewards.map((row) => row.reduce((a, b) => a + b, 0)),
    ),
    ...statMetrics('advantages', maskedValues(adv, mask)),
    ...statMetrics('returns', maskedValues(returns, mask)),
    'critic/reward_clip_frac': rewardClipFrac,
    'critic/token_reward_clip_frac': tokenRewardClipFrac,
    'critic/advantage_clip_frac': advantageClipFrac,
    'critic/kl_coef': klCoef ?? 0,
  };
  if (input.tokenKl) metrics['critic/kl'] = batchKl(input.tokenKl, mask);
  if (est === 'gae') Object.assign(metrics, statMetrics('values', maskedValues(input.values!, mask)));
  return { advantages: adv, returns, normalizedScores, metrics };
}
