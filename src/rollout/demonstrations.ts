/**
 * Demonstration episodes for the supervised warm-up (prepare.ts): `format` episodes play uniformly
 * random valid actions (the answer format, no skill); `solver` episodes play each
 * env's BFS plan (Env.solve; RAGEN's SFT on solver trajectories).
 */
import type { RunConfig } from '../config/schema';
import type { ChatTokenizer } from '../model/tokenizer';
import { Rng, deriveSeed } from '../util/rng';
import type { Policy } from './policy';
import { runGroups } from './pool';
import { randomActionPolicy, solverPolicy } from './scripted_policy';
import { rolloutGroup, tagOfEnvGroup, type RolloutGroup } from './plan';
import type { Trajectory } from './types';

/**
 * The episodes (of numEpisodes) that the solver plays: round(fraction * numEpisodes) indices drawn
 * without replacement from Rng(seed, "warmup", "solver"), in increasing order.
 */
export function solverEpisodes(numEpisodes: number, fraction: number, seed: number): number[] {
  const order = new Rng(seed, 'warmup', 'solver').shuffle([...Array(numEpisodes).keys()]);
  return order.slice(0, Math.round(fraction * numEpisodes)).sort((a, b) => a - b);
}

/** Demonstration episodes, and the env failures met while playing them (pool.ts messages). */
export interface Demonstrations {
  episodes: Trajectory[];
  errors: string[];
}

/** Plays one-member groups with a scripted policy (train split, step 0); failed envs are replaced. */
async function play(config: RunConfig, tokenizer: ChatTokenizer, groups: RolloutGroup[], policy: Policy): Promise<Demonstrations> {
  const { trajectories, errors } = await runGroups(groups, {
    policy, tokenizer, customEnvs: config.custom_envs, sequenceLength: config.sequence_length,
    maxNewTokens: config.actor_infer.generating_args.max_new_tokens, split: 'train', step: 0, groupSize: 1, redundancy: 0,
  });
  return { episodes: trajectories, errors };
}

/**
 * Warm-up demonstrations: warmup.num_episodes one-member groups over the train tags (in the
 * proportions of num_groups_partition), episode i with seed deriveSeed(seed, "warmup", i) and env id
 * i. With warmup.type solver, the solverEpisodes(...) of them play solverPolicy, the rest
 * randomActionPolicy; otherwise all play randomActionPolicy. Episodes in episode order; an episode
 * whose env fails is replaced as in the rollout pool (and dropped after its last try).
 */
export async function warmupDemonstrations(config: RunConfig, tokenizer: ChatTokenizer): Promise<Demonstrations> {
  const m = config.train_env_manager;
  const w = config.warmup;
  const stream = [config.seed, 'warmup'];
  const groups: RolloutGroup[] = Array.from({ length: w.num_episodes }, (_, i) => {
    const tag = tagOfEnvGroup(m.tags, m.num_groups_partition, i % m.num_env_groups);
    return rolloutGroup(tag, i, 0, deriveSeed(...stream, i), stream);
  });
  const solver = new Set(w.type === 'solver' ? solverEpisodes(w.num_episodes, w.solver_fraction, config.seed) : []);
  const bySolver = await play(config, tokenizer, groups.filter((g) => solver.has(g.groupId)), solverPolicy(tokenizer));
  const byRandom = await play(config, tokenizer, groups.filter((g) => !solver.has(g.groupId)), randomActionPolicy(tokenizer));
  return {
    episodes: [...bySolver.episodes, ...byRandom.episodes].sort((a, b) => a.groupId - b.groupId),
    errors: [...bySolver.errors, ...byRandom.errors],
  };
}

/** The episodes of the format demonstrations (warmupDemonstrations without solver, whatever warmup.type says). */
export async function formatDemonstrations(config: RunConfig, tokenizer: ChatTokenizer): Promise<Trajectory[]> {
  return (await warmupDemonstrations({ ...config, warmup: { ...config.warmup, type: 'format' } }, tokenizer)).episodes;
}
