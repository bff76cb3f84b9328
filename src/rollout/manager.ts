/**
 * TrajEnvManager: plays a batch of multi-turn episodes, all envs stepping in lockstep so each turn
 * is one batched generation call, and packs every episode into one token-in/token-out trajectory.
 * Source: SPEC.md §3-4 (ROLL roll/pipeline/agentic/env_manager/traj_env_manager.py).
 */
import { createEnv } from '../envs/registry';
import { ConfigError } from '../config/errors';
import { parseAction } from '../envs/parse';
import type { Env } from '../envs/types';
import type { Tokenizer } from '../model/tokenizer';
import { Rng } from '../util/rng';
import type { CustomEnvConfig } from '../config/schema';
import { fillTemplate, firstTurnPrompt, laterTurnPrompt } from './chat';
import type { Policy } from './policy';
import type { Trajectory, TurnRecord } from './types';

/** One env of the batch: where it sits and how it starts. */
export interface EpisodeSpec {
  tag: string;
  groupId: number;
  envId: number;
  /** Reset seed, equal for every member of a group (SPEC.md §3). */
  seed: number;
  /** "{tag}_{group_id}_{episode}_{seed}". */
  trajGroupId: string;
  /** Seed parts of this episode's sampling stream, e.g. [runSeed, split, step, envId]. */
  rngParts: Array<number | string>;
}

/** Settings shared by the batch. */
export interface ManagerOptions {
  policy: Policy;
  tokenizer: Tokenizer;
  customEnvs: Record<string, CustomEnvConfig>;
  /** Max tokens of one whole trajectory (SPEC.md §2 sequence_length). */
  sequenceLength: number;
  /** generating_args.max_new_tokens (tokens per turn, before the per-tag cap). */
  maxNewTokens: number;
  split: 'train' | 'val';
  step: number;
  /** Called after every turn (heartbeat and yield point for activities). */
  onTurn?: (turn: number, active: number) => Promise<void>;
}

interface Live {
  spec: EpisodeSpec;
  env: Env;
  cfg: CustomEnvConfig;
  rng: Rng;
  ids: number[];
  mask: number[];
  logprobs: number[];
  pending: number[];
  observation: string;
  turns: TurnRecord[];
  score: number;
  success: boolean;
  done: boolean;
  truncated: boolean;
}

function userContent(live: Live): string {
  const turn = live.turns.length;
  return fillTemplate(live.cfg.agent_template, {
    turn_idx: turn + 1,
    observation: live.observation,
    actions_left: live.cfg.max_steps - turn,
    max_response_length: live.cfg.max_tokens_per_step,
    suffix: '',
  });
}

/**
 * Runs the episodes to the end and returns one Trajectory per spec, in spec order.
 * An episode ends when the env terminates, after custom_envs.<tag>.max_steps turns (truncated),
 * or when the context reaches sequence_length (the unfinished turn is dropped, truncated).
 * @throws Error from createEnv when a tag has no custom_envs entry or a bad env_config
 * @throws ConfigError when sequence_length cannot hold the first prompt and one reply
 */
export async function runEpisodes(specs: EpisodeSpec[], opts: ManagerOptions): Promise<Trajectory[]> {
  const { tokenizer } = opts;
  const stopIds = new Set(tokenizer.eosIds);
  const lives: Live[] = specs.map((spec) => {
    const cfg = opts.customEnvs[spec.tag];
    if (!cfg) throw new Error(`tag ${JSON.stringify(spec.tag)} has no custom_envs entry`);
    const env = createEnv(cfg.env_type, cfg.env_config, { envId: spec.envId });
    const first = env.reset(spec.seed);
    const live: Live = {
      spec, env, cfg, rng: new Rng(...spec.rngParts), ids: [], mask: [], logprobs: [], pending: [],
      observation: first.observation, turns: [], score: 0, success: false, done: false, truncated: false,
    };
    live.pending = tokenizer.encode(firstTurnPrompt(cfg.agent_system_template, first.info.env_instruction, userContent(live)));
    return live;
  });

  for (let turn = 0; ; turn++) {
    const active = lives.filter((l) => !l.done);
    if (active.length === 0) break;
    const budgets = active.map((l) => {
      const room = opts.sequenceLength - l.ids.length - l.pending.length;
      const want = Math.min(l.cfg.max_tokens_per_step, opts.maxNewTokens);
      if (turn === 0 && room < want) {
        throw new ConfigError('sequence_length', [
          `${opts.sequenceLength} leaves no room for the first turn of tag ${l.spec.tag}: its prompt is ${l.pending.length} tokens ` +
            `and a reply may take ${want}; allowed: >= ${l.pending.length + want} (a few turns more for multi-turn envs)`,
        ]);
      }
      return Math.min(want, room);
    });
    const rows = active.filter((_, i) => budgets[i] > 0);
    for (const l of active) if (!rows.includes(l)) Object.assign(l, { done: true, truncated: true });
    if (rows.length === 0) break;
    const out = await opts.policy.generate({
      contexts: rows.map((l) => [...l.ids, ...l.pending]),
      maxNewTokens: budgets.filter((b) => b > 0),
      rngs: rows.map((l) => l.rng),
      actionNames: rows.map((l) => l.env.actionNames),
    });
    rows.forEach((l, i) => {
      const tokens = out.tokens[i];
      const closed = tokens.length > 0 && stopIds.has(tokens[tokens.length - 1]);
      if (!closed && l.ids.length + l.pending.length + tokens.length >= opts.sequenceLength) {
        Object.assign(l, { done: true, truncated: true }); // unfinished turn is dropped
        return;
      }
      l.ids.push(...l.pending, ...tokens);
      l.mask.push(...l.pending.map(() => 0), ...tokens.map(() => 1));
      l.logprobs.push(...l.pending.map(() => 0), ...out.logprobs[i]);
      const response = tokenizer.decode(tokens, false);
      const result = l.env.step(response);
      l.turns.push({
        observation: l.observation, response, action: parseAction(response, l.env.actionNames).action,
        reward: result.reward, actionIsValid: result.info.action_is_valid, actionIsEffective: result.info.action_is_effective,
      });
      l.score += result.reward;
      l.success = result.info.success;
      l.observation = result.observation;
      if (result.terminated) l.done = true;
      else if (l.turns.length >= l.cfg.max_steps) Object.assign(l, { done: true, truncated: true });
      else l.pending = tokenizer.encode(laterTurnPrompt(userContent(l), closed));
    });
    if (opts.onTurn) await opts.onTurn(turn, rows.length);
  }

  return lives.map((l) => ({
    trajGroupId: l.spec.trajGroupId,
    trajId: `${l.spec.trajGroupId}_${l.spec.envId}`,
    tag: l.spec.tag, groupId: l.spec.groupId, envId: l.spec.envId, seed: l.spec.seed,
    split: opts.split, step: opts.step,
    inputIds: l.ids, responseMask: l.mask, sampleLogprobs: l.logprobs, turns: l.turns,
    episodeScore: l.score, success: l.success, truncated: l.truncated,
  }));
}
