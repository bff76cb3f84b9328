/**
 * RAGEN-2's template-collapse diagnostics (docs/numerics.md §7, "Collapse diagnostics"): how much the first
 * turn's reasoning Z depends on its prompt X, estimated under the batch's uniform mixture of prompts from the
 * cross log-prob matrix l_j(z_i) = log p(z_i | x_j) (per-token mean and per-sequence sum). Source: RAGEN
 * ragen/trainer/collapse_metrics.py (CollapseDetector: _compute_log_prob_stats, _compute_mi_estimate,
 * _compute_retrieval_accuracy, _compute_reasoning_entropy, the marginal std and z-scores); checked against
 * values those functions return (test/fixtures/ragen/collapse_cases.json). Pure.
 */
import type { Trajectory } from '../contract';
import { mean } from './normalize';

/** RAGEN's std_eps of the z-scores. */
const STD_EPS = 1e-3;

/** The first-turn pairs of a batch: each valid pair's prompt column, its reasoning, and the distinct prompts. */
export interface FirstTurnPairs {
  /** Distinct first-turn prompts (the columns), in first-seen order. */
  prompts: number[][];
  /** Per pair: its reasoning (the first turn's response tokens) and its prompt's column. */
  reasoning: number[][];
  column: number[];
  /** Trajectories in the batch, and those with a non-empty first response. */
  total: number;
}

/**
 * Splits each trajectory at its first response token: the prompt X is everything before it, the reasoning Z the
 * first run of response tokens (starpo's turns have no separate think block, so Z is the whole first reply).
 * Identical prompts share one column, as RAGEN treats identical prompts as one.
 */
export function firstTurnPairs(trajectories: readonly Pick<Trajectory, 'inputIds' | 'responseMask'>[]): FirstTurnPairs {
  const columns = new Map<string, number>();
  const out: FirstTurnPairs = { prompts: [], reasoning: [], column: [], total: trajectories.length };
  for (const t of trajectories) {
    const start = t.responseMask.indexOf(1);
    if (start <= 0) continue;
    let end = start;
    while (end < t.responseMask.length && t.responseMask[end] === 1) end++;
    const prompt = t.inputIds.slice(0, start);
    const key = prompt.join(',');
    if (!columns.has(key)) {
      columns.set(key, out.prompts.length);
      out.prompts.push(prompt);
    }
    out.reasoning.push(t.inputIds.slice(start, end));
    out.column.push(columns.get(key)!);
  }
  return out;
}

/** torch .std(unbiased=False). */
const popStd = (xs: readonly number[]) => {
  const m = mean(xs);
  return Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
};
function logMeanExp(row: readonly number[]): number {
  const top = Math.max(...row);
  return top + Math.log(row.reduce((a, x) => a + Math.exp(x - top), 0)) - Math.log(row.length);
}

/** matched l_{col(i)}(z_i) and marginal log(mean_j exp l_j(z_i)) per pair. */
function stats(cross: readonly number[][], column: readonly number[]) {
  return { matched: cross.map((row, i) => row[column[i]]), marginal: cross.map(logMeanExp) };
}

/**
 * RAGEN-2's metrics (without its `collapse_first_turn_sample/` prefix) from the cross log-probs of every pair
 * (rows) under every prompt (columns): per-token means `perToken` and per-sequence sums `perSequence`.
 * Retrieval: the column with the highest per-token log-prob (the first on ties), correct when it is the pair's
 * own (columns are distinct prompts, so chance is 1/N); @k is the own column among the k highest.
 */
export function collapseMetrics(
  perToken: readonly number[][],
  perSequence: readonly number[][],
  column: readonly number[],
): Record<string, number> {
  const N = perToken[0].length;
  const tok = stats(perToken, column);
  const seq = stats(perSequence, column);
  const gapTok = tok.matched.map((m, i) => m - tok.marginal[i]);
  const gapSeq = seq.matched.map((m, i) => m - seq.marginal[i]);
  const out: Record<string, number> = {
    mi_estimate: mean(tok.matched) - mean(tok.marginal),
    mi_upper_bound: Math.log(N),
    matched_log_prob_mean: mean(tok.matched),
    marginal_log_prob_mean: mean(tok.marginal),
    mi_seq_estimate: mean(gapSeq),
    conditional_entropy_est: -mean(tok.matched),
    reasoning_entropy_est: -mean(tok.marginal),
    conditional_entropy_seq_est: -mean(seq.matched),
    reasoning_entropy_seq_est: -mean(seq.marginal),
  };
  const ranks = perToken.map((row) => [...row.keys()].sort((a, b) => row[b] - row[a] || a - b));
  out.retrieval_accuracy = mean(ranks.map((r, i) => (r[0] === column[i] ? 1 : 0)));
  out.retrieval_chance_level = 1 / N;
  out.retrieval_above_chance = out.retrieval_accuracy - out.retrieval_chance_level;
  for (const k of [2, 4, 8]) {
    const kEff = Math.min(k, N);
    out[`retrieval_accuracy@${k}`] = mean(ranks.map((r, i) => (r.slice(0, kEff).includes(column[i]) ? 1 : 0)));
    out[`retrieval_chance_level@${k}`] = kEff / N;
    out[`retrieval_above_chance@${k}`] = out[`retrieval_accuracy@${k}`] - kEff / N;
  }
  const stdTok = popStd(tok.marginal);
  const stdSeq = popStd(seq.marginal);
  out.marginal_std = stdTok;
  out.marginal_std_seq = stdSeq;
  out.mi_zscore = mean(gapTok.map((g) => g / (stdTok + STD_EPS)));
  out.mi_zscore_seq = mean(gapSeq.map((g) => g / (stdSeq + STD_EPS)));
  return out;
}
