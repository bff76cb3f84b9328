/**
 * Validation rollouts, shared by the training workflow (every eval_steps) and `starpo eval`
 * (workflow starpoEvaluation): the val shards of plan.ts (planShards(config, 'val', step): new states
 * per step, or the fixed held-out states with val_env_manager.fixed_states), one rollout activity per
 * shard on "starpo-rollout", their sums merged in shard order. Workflow code: deterministic, no I/O.
 */
import type { RunConfig } from '../contract/run_config';
import type { ObjectRef } from '../contract/store';
import type { MetricSums, RolloutGroup } from '../contract/trajectory';
import { mergeSums } from '../rollout/metrics';
import { activityProxies } from './proxies';

/** What to validate. */
export interface ValidationRequest {
  runId: string;
  /** Pipeline step of the policy (names the shards; the val seeds unless fixed_states). */
  step: number;
  /** Manifest of the checkpoint that plays. */
  policy: ObjectRef;
  /** planShards(config, 'val', step). */
  shards: RolloutGroup[][];
  /** The evaluation's name for `starpo eval` (its own config and folder); unset in training. */
  evalName?: string;
  /** The run's config (its heartbeat timeout). */
  config: RunConfig;
  /** Called as each shard's rollout completes. */
  onShard?: (done: number) => void;
}

/**
 * Plays the validation groups and returns their merged metric sums (meanMetrics(sums, 'val/') gives
 * val/env/success, val/{tag}/score, ...). Each rollout activity carries the summary
 * "validation step N shard k/K" (or "eval <name> shard k/K") for the Temporal UI.
 */
export async function playValidation(r: ValidationRequest): Promise<MetricSums> {
  const { shards } = r;
  const { rollout } = activityProxies(r.config);
  let done = 0;
  const label = r.evalName === undefined ? `validation step ${r.step}` : `eval ${r.evalName}`;
  const outs = await Promise.all(
    shards.map(async (groups, shard) => {
      const input = {
        runId: r.runId,
        step: r.step,
        split: 'val' as const,
        shard,
        policy: r.policy,
        groups,
        ...(r.evalName === undefined ? {} : { eval: r.evalName }),
      };
      const out = await rollout.rollout.executeWithOptions({ summary: `${label} shard ${shard + 1}/${shards.length}` }, [input]);
      r.onShard?.(++done);
      return out;
    }),
  );
  return mergeSums(outs.map((o) => o.metrics));
}
