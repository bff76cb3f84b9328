/**
 * Which way does a group of Bandit rollouts push the policy? Exact expectation (no sampling) of the
 * score-function gradient on the high-arm logit of a two-arm policy, E[sum_i A_i (1[i chose high] - p)],
 * for a group of `group_size` rollouts of configs/bandit.yaml's env (low arm pays 0.1; high arm pays 1
 * with probability 0.25, else 0), with the advantages A from starpo's own normalizeScores
 * (src/algo/normalize.ts) under each reward_normalization.method, at several high-arm rates p.
 * Positive = towards the high arm (expected payout 0.25 > 0.1).
 *
 *   npx tsx bench/bandit_advantage.ts [group_size=8]
 */
import { type NormMethod, normalizeScores, normTypesOf } from '../src/algo/normalize';

const LOW = 0.1;
const HIGH = 1;
const HIGH_PROB = 0.25;

function binomial(n: number, k: number): number {
  let c = 1;
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i;
  return c;
}

/** E[sum_i A_i (1[high_i] - p)] over k ~ Bin(n, p) high-arm picks and w ~ Bin(k, HIGH_PROB) wins. */
function expectedGradient(n: number, p: number, method: NormMethod): number {
  let total = 0;
  for (let k = 0; k <= n; k++) {
    for (let w = 0; w <= k; w++) {
      const prob = binomial(n, k) * p ** k * (1 - p) ** (n - k) * binomial(k, w) * HIGH_PROB ** w * (1 - HIGH_PROB) ** (k - w);
      const scores = [...Array(w).fill(HIGH), ...Array(k - w).fill(0), ...Array(n - k).fill(LOW)];
      const adv = normalizeScores(
        scores,
        scores.map(() => 'g'),
        normTypesOf(method, 'traj_group_id'),
      );
      total += prob * adv.reduce((s, a, i) => s + a * ((i < k ? 1 : 0) - p), 0);
    }
  }
  return total;
}

const n = Number(process.argv[2] ?? 8);
const rates = [0.1, 0.3, 0.5, 0.7, 0.9];
console.log(`group_size ${n}: expected gradient on the high-arm logit per group (positive = towards the high arm)`);
console.log(`method     ${rates.map((p) => `p=${p}`.padStart(8)).join('')}`);
for (const method of ['mean_std', 'mean'] as const) {
  console.log(`${method.padEnd(9)}  ${rates.map((p) => expectedGradient(n, p, method).toFixed(3).padStart(8)).join('')}`);
}
