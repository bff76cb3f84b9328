/**
 * RAGEN-2's early stops (docs/numerics.md §7): the variance filter keeping no group for
 * rollout_filter_empty_stop_steps steps in a row; the in-group reward std collapsing below a fraction of
 * its early baseline for a window of steps (early_stop.reward_variance_collapse); a validation tag's success
 * staying below a threshold for a window of evaluations (early_stop.low_validation_success). Pure and
 * deterministic (runs inside the workflow); the counts travel in EarlyStopState across continue-as-new.
 */
import type { RunConfig } from '../contract/run_config';
import type { EarlyStopState } from '../contract/workflow';

/** What a config stored before early_stop existed gets (recorded histories replay with it): both stops off. */
const EARLY_STOP_OFF: RunConfig['early_stop'] = {
  reward_variance_collapse: { enabled: false, baseline_steps: 10, window: 10, fraction: 0.1 },
  low_validation_success: { enabled: false, threshold: 0.01, window: 5 },
};

/** A run's counts before its first step. */
export function freshEarlyStop(): EarlyStopState {
  return { emptyFilter: 0, varianceBaseline: [], varianceWindow: [], lowSuccess: {} };
}

/**
 * One step's verdict: the new counts, the metric to mark and why, when a stop fires (early_stopped/<stop>:
 * RAGEN's names for its two stops; empty_filter is starpo's name for the filter's).
 */
export interface EarlyStopVerdict {
  state: EarlyStopState;
  fired: { metric: string; reason: string } | null;
}

/**
 * Counts one step's metrics (its rollout/* and, when it validated, val/env/<tag>/success) and says whether
 * a stop fires; the first that fires wins.
 */
export function checkEarlyStop(config: RunConfig, metrics: Record<string, number>, before: EarlyStopState): EarlyStopVerdict {
  const state: EarlyStopState = {
    emptyFilter: metrics['rollout/filter_kept_count'] === 0 ? before.emptyFilter + 1 : 0,
    varianceBaseline: [...before.varianceBaseline],
    varianceWindow: [...before.varianceWindow],
    lowSuccess: { ...before.lowSuccess },
  };
  const fired: Array<EarlyStopVerdict['fired']> = [];
  const emptyLimit = config.rollout_filter_empty_stop_steps ?? 0;
  const early = config.early_stop ?? EARLY_STOP_OFF;
  if (emptyLimit > 0 && state.emptyFilter >= emptyLimit) {
    fired.push({
      metric: 'early_stopped/empty_filter',
      reason: `the rollout filter kept no group for ${state.emptyFilter} steps in a row (rollout_filter_empty_stop_steps ${emptyLimit})`,
    });
  }

  const rv = early.reward_variance_collapse;
  const std = metrics['rollout/in_group_std'];
  // As RAGEN, only steps that trained count: a step whose filter kept nothing has no update to judge.
  if (std !== undefined && metrics['rollout/filter_kept_count'] !== 0) {
    if (state.varianceBaseline.length < rv.baseline_steps) state.varianceBaseline.push(std);
    else state.varianceWindow = [...state.varianceWindow, std].slice(-rv.window);
    const base = state.varianceBaseline.reduce((a, b) => a + b, 0) / Math.max(1, state.varianceBaseline.length);
    if (rv.enabled && state.varianceWindow.length === rv.window && state.varianceWindow.every((v) => v < rv.fraction * base)) {
      fired.push({
        metric: 'early_stopped/reward_variance_collapse',
        reason: `rollout/in_group_std stayed below ${rv.fraction} x its baseline ${base.toFixed(4)} (the mean of the first ${rv.baseline_steps} steps) for ${rv.window} steps`,
      });
    }
  }

  const low = early.low_validation_success;
  for (const [key, success] of Object.entries(metrics)) {
    const tag = /^val\/env\/([^/]+)\/success$/.exec(key)?.[1];
    if (tag === undefined) continue;
    state.lowSuccess[tag] = success < low.threshold ? (state.lowSuccess[tag] ?? 0) + 1 : 0;
    if (low.enabled && state.lowSuccess[tag] >= low.window) {
      fired.push({
        metric: 'early_stopped/low_validation_success',
        reason: `validation success of ${tag} stayed below ${low.threshold} for ${low.window} evaluations in a row`,
      });
    }
  }
  return { state, fired: fired[0] ?? null };
}
