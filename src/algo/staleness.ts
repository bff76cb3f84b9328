/**
 * Off-policy bookkeeping of asynchronous rollouts (async_generation_ratio r > 0): how many policy versions a
 * trajectory lags behind the update that consumes it, the discard of groups older than r allows, and the old
 * log-probs of the PPO ratio for stale trajectories (ROLL roll/distributed/scheduler/rollout_scheduler.py GroupQueue).
 */
import type { Trajectory } from '../contract';

/**
 * Policy versions (pipeline steps) between the policy that sampled `t` and the update of step `step`
 * that consumes it: (step - t.step) + t.staleness (absent staleness = 0: played by its own step's policy).
 */
export function stalenessOf(t: Pick<Trajectory, 'step' | 'staleness'>, step: number): number {
  return step - t.step + (t.staleness ?? 0);
}

/** What dropStale keeps and reports. */
export interface StaleFilterOutput {
  /** The trajectories of the groups within the ratio, in input order. */
  kept: Trajectory[];
  /**
   * rollout/staleness/mean and rollout/staleness/max (policy versions, over every received trajectory)
   * and rollout/discarded_stale (trajectories dropped: whole groups, as ROLL drops groups).
   */
  metrics: Record<string, number>;
}

/**
 * Drops the groups (trajGroupId) with a trajectory more than `ratio` policy versions behind `step`, as ROLL's
 * GroupQueue.advance_step drops a group created at step c once `step - c > async_generation_ratio` (and put ignores
 * the rollouts of dropped groups).
 * @param step the pipeline step of the update
 * @param ratio async_generation_ratio (an integer >= 0)
 */
export function dropStale(trajectories: readonly Trajectory[], step: number, ratio: number): StaleFilterOutput {
  const lags = trajectories.map((t) => stalenessOf(t, step));
  const tooOld = new Set(trajectories.filter((_, i) => lags[i] > ratio).map((t) => t.trajGroupId));
  const kept = trajectories.filter((t) => !tooOld.has(t.trajGroupId));
  const n = Math.max(1, lags.length);
  return {
    kept,
    metrics: {
      'rollout/staleness/mean': lags.reduce((a, b) => a + b, 0) / n,
      'rollout/staleness/max': lags.length > 0 ? Math.max(...lags) : 0,
      'rollout/discarded_stale': trajectories.length - kept.length,
    },
  };
}

/**
 * The old log-probs of the importance ratio, [B][T] shifted (nats, 0 off the response mask): the sampled
 * log-probs for rows whose trajectory is stale, `recomputed` (the current policy before the update) for
 * the others. The sampling log-probs are the behaviour policy of the ratio, which the current weights can no
 * longer recompute (ROLL's infer log-probs, roll/utils/train_infer_corrections.py).
 * @param stale per row, true when the trajectory lags behind the update (stalenessOf > 0)
 * @param sampled shiftedArrays(...).sampleLogprobs of the same rows
 * @param recomputed the prepass's old log-probs; may be null only when every row is stale
 * @throws Error when a row is not stale and `recomputed` is null
 */
export function oldLogpRows(stale: readonly boolean[], sampled: readonly number[][], recomputed: readonly number[][] | null): number[][] {
  return stale.map((s, i) => {
    if (s) return [...sampled[i]];
    if (!recomputed) throw new Error(`oldLogpRows: row ${i} is on-policy but no recomputed old log-probs were given`);
    return [...recomputed[i]];
  });
}
