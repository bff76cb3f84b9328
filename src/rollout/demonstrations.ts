/**
 * Demonstration episodes for the format warm-up (issue 2, item 5): the answer format, no skill.
 */
import type { RunConfig } from '../config/schema';
import type { Tokenizer } from '../model/tokenizer';
import { deriveSeed } from '../util/rng';
import { runEpisodes, EpisodeSpec } from './manager';
import { randomActionPolicy } from './scripted_policy';
import { tagOfEnvGroup } from './plan';
import type { Trajectory } from './types';

/**
 * Format demonstrations: warmup.num_episodes episodes over the train tags (in the proportions of
 * num_groups_partition) played by the random-valid-action policy, with seeds from (seed, "warmup", i).
 */
export async function formatDemonstrations(config: RunConfig, tokenizer: Tokenizer): Promise<Trajectory[]> {
  const m = config.train_env_manager;
  const specs: EpisodeSpec[] = Array.from({ length: config.warmup.num_episodes }, (_, i) => {
    const tag = tagOfEnvGroup(m.tags, m.num_groups_partition, i % m.num_env_groups);
    const seed = deriveSeed(config.seed, 'warmup', i);
    return { tag, groupId: i, envId: i, seed, trajGroupId: `${tag}_${i}_0_${seed}`, rngParts: [config.seed, 'warmup', i] };
  });
  return runEpisodes(specs, {
    policy: randomActionPolicy(tokenizer), tokenizer, customEnvs: config.custom_envs, sequenceLength: config.sequence_length,
    maxNewTokens: config.actor_infer.generating_args.max_new_tokens, split: 'train', step: 0,
  });
}
