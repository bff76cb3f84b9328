/**
 * Activity `rollout` (task queue "starpo-rollout"): plays one shard of env groups with a policy
 * checkpoint and stores the trajectories as jsonl.gz at a key that is a pure function of
 * (run, step, split, shard), so a retried attempt rewrites the same object (DESIGN.md).
 */
import { rolloutKey } from '../storage/keys';
import { runEpisodes, EpisodeSpec } from '../rollout/manager';
import { modelPolicy } from '../rollout/model_policy';
import { sumMetrics } from '../rollout/metrics';
import type { RolloutInput, RolloutOutput } from './types';
import { ActivityRuntime, heartbeat } from './runtime';

/** Builds the rollout activity over a runtime. */
export function rolloutActivity(rt: ActivityRuntime) {
  return async function rollout(input: RolloutInput): Promise<RolloutOutput> {
    const started = performance.now();
    const { config } = await rt.run(input.runId);
    const manager = input.split === 'train' ? config.train_env_manager : config.val_env_manager;
    const generating = { ...config.actor_infer.generating_args, ...(manager.generating_args ?? {}) };
    const specs: EpisodeSpec[] = input.groups.flatMap((g) =>
      Array.from({ length: manager.group_size }, (_, j) => {
        const envId = g.groupId * manager.group_size + j;
        // Validation samples from a stream that does not depend on the step: every checkpoint meets the
        // same states with the same random numbers, so differences between evaluations are the policy's.
        const rngParts = input.split === 'train' ? [config.seed, 'train', input.step, envId] : [config.seed, 'val', envId];
        return { tag: g.tag, groupId: g.groupId, envId, seed: g.seed, trajGroupId: g.trajGroupId, rngParts };
      }),
    );
    const checkpoint = await rt.take(input.policy);
    try {
      const trajectories = await runEpisodes(specs, {
        policy: modelPolicy(checkpoint.model, checkpoint.tokenizer, generating),
        tokenizer: checkpoint.tokenizer,
        customEnvs: config.custom_envs,
        sequenceLength: config.sequence_length,
        maxNewTokens: generating.max_new_tokens,
        split: input.split,
        step: input.step,
        onTurn: (turn, active) => heartbeat({ turn, active }),
      });
      const ref = await rt.store.putJsonlGz(rolloutKey(input.runId, input.step, input.split, input.shard), trajectories);
      return { trajectories: ref, metrics: sumMetrics(trajectories), seconds: (performance.now() - started) / 1000 };
    } finally {
      rt.keep(input.policy, checkpoint);
    }
  };
}
