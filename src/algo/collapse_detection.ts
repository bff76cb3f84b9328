/**
 * `collapse_detection` (RAGEN-2's first-turn diagnostics, docs/numerics.md §7): on due steps, score every
 * first-turn reasoning under every distinct first-turn prompt of the batch with the policy that played it,
 * and report collapse_mi.ts's metrics under RAGEN's `collapse_first_turn_sample/` prefix. No gradient; the
 * weights are those the update starts from (the ones that played the batch unless async_generation_ratio > 0).
 */
import * as tf from '@tensorflow/tfjs';
import type { RunConfig, Trajectory } from '../contract';
import { tokenLogProbs } from '../model/logprobs';
import type { Qwen2 } from '../model/qwen2';
import { Rng } from '../util/rng';
import { collapseMetrics, firstTurnPairs } from './collapse_mi';

/** Whether the diagnostics run at pipeline step `step` (0-based): RAGEN's global step 1, then every compute_freq. */
export function collapseDetectionDue(c: RunConfig['collapse_detection'] | undefined, step: number): boolean {
  if (!c?.first_turn_enabled) return false;
  const global = step + 1;
  return global === 1 || global % c.compute_freq === 0;
}

/**
 * log p(z_i | x_j) of every reasoning i under every prompt j, as per-token means and per-sequence sums:
 * [prompt j | reasoning i] right-padded in micro-batches of `microBatch` rows, lm_head only at the reasoning.
 * @param afterMicroBatch awaited after each micro-batch (the update activity's heartbeat)
 */
export async function crossLogProbs(
  model: Qwen2,
  prompts: readonly number[][],
  reasoning: readonly number[][],
  microBatch: number,
  padId: number,
  afterMicroBatch: () => Promise<void> = async () => undefined,
): Promise<{ perToken: number[][]; perSequence: number[][] }> {
  const perToken = reasoning.map(() => new Array<number>(prompts.length).fill(0));
  const perSequence = reasoning.map(() => new Array<number>(prompts.length).fill(0));
  for (const [j, x] of prompts.entries()) {
    for (let from = 0; from < reasoning.length; from += microBatch) {
      const rows = reasoning.slice(from, from + microBatch);
      const L = x.length + Math.max(...rows.map((z) => z.length));
      const ids = new Int32Array(rows.length * L).fill(padId);
      const attention = new Float32Array(rows.length * L);
      const at = new Float32Array(rows.length * (L - 1));
      rows.forEach((z, b) => {
        [...x, ...z].forEach((id, p) => {
          ids[b * L + p] = id;
          attention[b * L + p] = 1;
        });
        // Output p - 1 is log p(token p | tokens < p): the reasoning's tokens are p = |x| .. |x| + |z| - 1.
        for (let p = x.length; p < x.length + z.length; p++) at[b * (L - 1) + p - 1] = 1;
      });
      const logp = tf.tidy(() => {
        const out = tokenLogProbs(model, tf.tensor2d(ids, [rows.length, L], 'int32'), tf.tensor2d(attention, [rows.length, L]), {
          at: tf.tensor2d(at, [rows.length, L - 1]),
          entropyGradient: false,
        });
        return out.logp;
      });
      const values = logp.dataSync();
      logp.dispose();
      rows.forEach((z, b) => {
        let sum = 0;
        for (let p = x.length; p < x.length + z.length; p++) sum += values[b * (L - 1) + p - 1];
        perSequence[from + b][j] = sum;
        perToken[from + b][j] = sum / z.length;
      });
      await afterMicroBatch();
    }
  }
  return { perToken, perSequence };
}

/**
 * The diagnostics of one batch: collapse/first_turn_num_total, _num_valid, _valid_rate, and (with at least two
 * distinct prompts) collapse_first_turn_sample/<metric> of collapse_mi.ts on at most num_samples pairs, drawn
 * with the run's seed and the step; timing_s/collapse_first_turn_step in seconds.
 */
export async function collapseDiagnostics(
  model: Qwen2,
  trajectories: readonly Trajectory[],
  config: RunConfig,
  step: number,
  padId: number,
  afterMicroBatch?: () => Promise<void>,
): Promise<Record<string, number>> {
  const started = performance.now();
  const c = config.collapse_detection;
  const pairs = firstTurnPairs(trajectories);
  const valid = pairs.reasoning.length;
  const out: Record<string, number> = {
    'collapse/first_turn_num_total': pairs.total,
    'collapse/first_turn_num_valid': valid,
    'collapse/first_turn_valid_rate': pairs.total > 0 ? valid / pairs.total : 0,
  };
  let chosen = [...Array(valid).keys()];
  if (c.num_samples !== null && c.num_samples < valid) {
    chosen = new Rng(config.seed, 'collapse-detection', step)
      .shuffle(chosen)
      .slice(0, c.num_samples)
      .sort((a, b) => a - b);
  }
  // Columns are the prompts of the chosen pairs only, as RAGEN takes them from the sampled pairs.
  const used = [...new Set(chosen.map((i) => pairs.column[i]))].sort((a, b) => a - b);
  if (used.length >= 2) {
    const columnOf = new Map(used.map((col, k) => [col, k]));
    const cross = await crossLogProbs(
      model,
      used.map((col) => pairs.prompts[col]),
      chosen.map((i) => pairs.reasoning[i]),
      c.micro_batch_size,
      padId,
      afterMicroBatch,
    );
    const metrics = collapseMetrics(
      cross.perToken,
      cross.perSequence,
      chosen.map((i) => columnOf.get(pairs.column[i])!),
    );
    for (const [k, v] of Object.entries(metrics)) out[`collapse_first_turn_sample/${k}`] = v;
  }
  out['timing_s/collapse_first_turn_step'] = (performance.now() - started) / 1000;
  return out;
}
