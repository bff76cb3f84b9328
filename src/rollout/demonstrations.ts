/**
 * Demonstration episodes for the supervised warm-up: `format` episodes play uniformly random valid
 * actions (the answer format, no skill); `solver` episodes play each env's BFS plan (Env.solve;
 * RAGEN's SFT on solver trajectories). Both come from scripted policies whose log-probs are 0.
 */
import type { RolloutGroup, RunConfig, Trajectory } from '../contract';
import type { ChatTokenizer } from '../model/tokenizer';
import { deriveSeed, Rng } from '../util/rng';
import { answerText } from './first_turn';
import { runGroups } from './manager';
import { rolloutGroup, tagOfEnvGroup } from './plan';
import type { Policy, PolicyRequest, PolicyResponse, RowEnv } from './policy';

// Scripted policies: they answer "<answer>{action}</answer>" (or "<think></think><answer>{action}</answer>"
// for a think-pattern tag), then the model's first stop token (<|im_end|> for Qwen2.5 instruct and the
// tiny preset). Log-probs are reported as 0 (the episodes are demonstrations, not samples).

/** An action a scripted policy plays, and whether the demonstration teaches it (false for a noise move). */
interface Move {
  action: string;
  learned: boolean;
}

/** A policy that answers each row with `choose(env, rng)`, formatted for the row's pattern. */
function answeringPolicy(tokenizer: ChatTokenizer, choose: (env: RowEnv, rng: Rng) => Move): Policy {
  const stop = tokenizer.decode(tokenizer.eosIds.slice(0, 1), false);
  return {
    async generate(request: PolicyRequest): Promise<PolicyResponse> {
      const moves = request.envs.map((env, i) => choose(env, request.rngs[i]));
      const tokens = moves.map(({ action }, i) =>
        tokenizer.encode(`${answerText(action, request.envs[i].enableThink)}${stop}`).slice(0, request.maxNewTokens[i]),
      );
      return { tokens, logprobs: tokens.map((t) => t.map(() => 0)), learned: moves.map((m) => m.learned) };
    },
  };
}

/**
 * A uniformly random action name. An env with free-form answers and no action names (Countdown) has
 * no random valid action: it gets its solver's answer, or an empty answer without a solver.
 */
const randomAction = (env: RowEnv, rng: Rng) =>
  env.actionNames.length > 0 ? env.actionNames[rng.int(env.actionNames.length)] : (env.solve?.()?.[0] ?? '');

/** The random-valid-action policy: a uniformly random valid action from each row's seeded stream (format only). */
export function randomActionPolicy(tokenizer: ChatTokenizer): Policy {
  return answeringPolicy(tokenizer, (env, rng) => ({ action: randomAction(env, rng), learned: true }));
}

/**
 * The solver policy: the first action of the env's shortest plan (Env.solve, BFS) from its current
 * state, re-planned every turn. A row whose env has no solve() or no plan from its state (e.g. slippery
 * FrozenLake) gets a random valid action (from its stream), so every row still answers validly.
 * With `noise` > 0, each turn plays a random valid action with that probability instead (DART's
 * noise injection), not learned from: the demonstrations then also visit states off the shortest
 * path, such as after a move into a wall, and teach only the way on from them.
 */
export function solverPolicy(tokenizer: ChatTokenizer, noise = 0): Policy {
  return answeringPolicy(tokenizer, (env, rng) =>
    noise > 0 && rng.next() < noise
      ? { action: randomAction(env, rng), learned: false }
      : { action: env.solve?.()?.[0] ?? randomAction(env, rng), learned: true },
  );
}

/**
 * The episodes (of numEpisodes) that the solver plays: round(fraction * numEpisodes) indices drawn
 * without replacement from Rng(seed, "warmup", "solver"), in increasing order.
 */
export function solverEpisodes(numEpisodes: number, fraction: number, seed: number): number[] {
  const order = new Rng(seed, 'warmup', 'solver').shuffle([...Array(numEpisodes).keys()]);
  return order.slice(0, Math.round(fraction * numEpisodes)).sort((a, b) => a - b);
}

/** Demonstration episodes, and the env failures met while playing them (runGroups messages). */
export interface Demonstrations {
  episodes: Trajectory[];
  errors: string[];
}

/**
 * Plays one-member groups with a scripted policy (train split, step 0); failed envs are replaced. At most
 * train_env_manager.max_env_num_per_worker episodes play at once (0: all), as in a rollout worker: a remote env's server
 * holds one session per episode, and the warm-up's thousands would exceed what it allows. Episodes are
 * independent, so this changes none of them.
 */
async function play(config: RunConfig, tokenizer: ChatTokenizer, groups: RolloutGroup[], policy: Policy): Promise<Demonstrations> {
  const out: Demonstrations = { episodes: [], errors: [] };
  const atOnce = config.train_env_manager.max_env_num_per_worker || Math.max(groups.length, 1); // 0: all in one worker
  for (let i = 0; i < groups.length; i += atOnce) {
    const { trajectories, errors } = await runGroups(groups.slice(i, i + atOnce), {
      policy,
      tokenizer,
      customEnvs: config.custom_envs,
      sequenceLength: config.sequence_length,
      maxNewTokens: config.actor_infer.generating_args.max_new_tokens,
      split: 'train',
      step: 0,
      groupSize: 1,
      redundancy: 0,
    });
    out.episodes.push(...trajectories);
    out.errors.push(...errors);
  }
  return out;
}

/**
 * Warm-up demonstrations: warmup.num_episodes one-member groups over the train tags (in the
 * proportions of num_groups_partition), episode i with seed deriveSeed(seed, "warmup", i) and env id
 * i. With warmup.type solver, the solverEpisodes(...) of them play solverPolicy (with warmup.solver_noise), the rest
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
  const bySolver = await play(
    config,
    tokenizer,
    groups.filter((g) => solver.has(g.groupId)),
    solverPolicy(tokenizer, w.solver_noise),
  );
  const byRandom = await play(
    config,
    tokenizer,
    groups.filter((g) => !solver.has(g.groupId)),
    randomActionPolicy(tokenizer),
  );
  return {
    episodes: [...bySolver.episodes, ...byRandom.episodes].sort((a, b) => a.groupId - b.groupId),
    errors: [...bySolver.errors, ...byRandom.errors],
  };
}

/** The episodes of the format demonstrations (warmupDemonstrations without solver, whatever warmup.type says). */
export async function formatDemonstrations(config: RunConfig, tokenizer: ChatTokenizer): Promise<Trajectory[]> {
  return (await warmupDemonstrations({ ...config, warmup: { ...config.warmup, type: 'format' } }, tokenizer)).episodes;
}
