/**
 * Activity `rollout` (task queue "starpo-rollout"): plays one shard of env groups with a policy
 * checkpoint through the env pool (complete groups only; failed groups replaced, issue 4 item 6) and
 * stores the trajectories as jsonl.gz at a key that is a pure function of (run, step, split, shard),
 * so a retried attempt rewrites the same object (DESIGN.md). Env failures are logged as warnings and
 * counted in the metrics, never thrown.
 */
import { log } from '@temporalio/activity';
import { rolloutKey } from '../storage/keys';
import { modelPolicy } from '../rollout/model_policy';
import { sumMetrics } from '../rollout/metrics';
import { generatingArgsOf } from '../rollout/plan';
import { runGroups } from '../rollout/pool';
import type { RolloutInput, RolloutOutput } from './types';
import { ActivityRuntime, heartbeat } from './runtime';

/** Builds the rollout activity over a runtime. */
export function rolloutActivity(rt: ActivityRuntime) {
  return async function rollout(input: RolloutInput): Promise<RolloutOutput> {
    const started = performance.now();
    const { config } = await rt.run(input.runId);
    const manager = input.split === 'train' ? config.train_env_manager : config.val_env_manager;
    const generating = generatingArgsOf(config, input.split);
    const checkpoint = await rt.take(input.policy);
    try {
      const { trajectories, stats, errors } = await runGroups(input.groups, {
        policy: modelPolicy(checkpoint.model, checkpoint.tokenizer, generating),
        tokenizer: checkpoint.tokenizer,
        customEnvs: config.custom_envs,
        sequenceLength: config.sequence_length,
        maxNewTokens: generating.max_new_tokens,
        split: input.split,
        step: input.step,
        groupSize: manager.group_size,
        redundancy: manager.group_size_redundancy,
        onTurn: (turn, active) => heartbeat({ turn, active }),
      });
      for (const error of errors) log.warn(`${input.split} step ${input.step} shard ${input.shard}: env failure: ${error}`);
      const ref = await rt.store.putJsonlGz(rolloutKey(input.runId, input.step, input.split, input.shard), trajectories);
      const totals = { 'env/failed_episodes': stats.failedEpisodes, 'env/replaced_groups': stats.replacedGroups, 'env/dropped_groups': stats.droppedGroups };
      const metrics = sumMetrics(trajectories, { totals, groupScores: input.split === 'val' });
      return { trajectories: ref, metrics, seconds: (performance.now() - started) / 1000 };
    } finally {
      rt.keep(input.policy, checkpoint);
    }
  };
}
