/**
 * TrajEnvManager: plays a batch of multi-turn episodes, all envs stepping in lockstep so each turn
 * is one batched generation call, and packs every episode into one token-in/token-out trajectory.
 * An env that throws (reset or step) or runs over its tag's episode_timeout_seconds fails its episode
 * and stops its whole group (trajGroupId); the pool (pool.ts) replaces such groups.
 * Source: SPEC.md §3-4 (ROLL roll/pipeline/agentic/env_manager/traj_env_manager.py).
 */
import { createEnv } from '../envs/registry';
import { ConfigError } from '../config/errors';
import { parseAction, type Env } from '../envs/env';
import type { ChatTokenizer } from '../model/tokenizer';
import { Rng } from '../util/rng';
import type { CustomEnvConfig } from '../config/schema';
import { EpisodeChat, fillTemplate, firstUserMessage, formatSuffix, usesThinkPattern } from './chat';
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
  /** The model's tokenizer: its chat template renders the prompts, its eosIds end the replies. */
  tokenizer: ChatTokenizer;
  customEnvs: Record<string, CustomEnvConfig>;
  /** Max tokens of one whole trajectory (SPEC.md §2 sequence_length). */
  sequenceLength: number;
  /** generating_args.max_new_tokens (tokens per turn, before the per-tag cap). */
  maxNewTokens: number;
  split: 'train' | 'val';
  step: number;
  /** Called after every env reset (turn -1, active = envs reset so far) and every turn (heartbeat and yield point for activities). */
  onTurn?: (turn: number, active: number) => Promise<void>;
}

/**
 * How an episode ended: `finished` (env terminated, turn cap or sequence_length cut; see
 * Trajectory.truncated), `failed` (its env threw or ran over its time budget; `error` says which),
 * or `cut` (stopped because its group failed or already has enough finishers).
 */
export interface EpisodeOutcome {
  /** The episode as far as it got (whole only when finished). */
  trajectory: Trajectory;
  status: 'finished' | 'failed' | 'cut';
  /** The lockstep turn (0-based) in which it ended; -1 = at reset. */
  endedAt: number;
  /** Failed only: "{tag} env {id} (group g, seed s): ..." with the env's message or the budget. */
  error?: string;
}

interface Live {
  spec: EpisodeSpec;
  env: Env;
  cfg: CustomEnvConfig;
  enableThink: boolean;
  rng: Rng;
  chat: EpisodeChat;
  ids: number[];
  mask: number[];
  logprobs: number[];
  pending: number[];
  observation: string;
  turns: TurnRecord[];
  score: number;
  success: boolean;
  truncated: boolean;
  /** Wall seconds spent in env.reset / env.step so far. */
  envSeconds: number;
  status: EpisodeOutcome['status'] | null;
  endedAt: number;
  error?: string;
}

function userContent(live: Live): string {
  const turn = live.turns.length;
  return fillTemplate(live.cfg.agent_template, {
    turn_idx: turn + 1,
    observation: live.observation,
    actions_left: live.cfg.max_steps - turn,
    max_response_length: live.cfg.max_tokens_per_step,
    suffix: formatSuffix(live.enableThink),
  });
}

function end(live: Live, status: EpisodeOutcome['status'], turn: number, error?: string): void {
  Object.assign(live, { status, endedAt: turn, error });
}

/** Ends an episode by the turn cap or the sequence_length cut. */
function truncate(live: Live, turn: number): void {
  live.truncated = true;
  end(live, 'finished', turn);
}

/**
 * Runs an env call, timing it against the episode budget. Returns its result, or null after marking
 * the episode failed (the env threw, or the episode's env time went over episode_timeout_seconds; a
 * synchronous call cannot be preempted, so the time is checked once it returns).
 */
function guarded<T>(live: Live, what: string, turn: number, call: () => T): T | null {
  const { spec, cfg } = live;
  const where = `${spec.tag} env ${spec.envId} (group ${spec.groupId}, seed ${spec.seed}): ${what}`;
  const started = performance.now();
  try {
    const out = call();
    live.envSeconds += (performance.now() - started) / 1000;
    if (live.envSeconds <= cfg.episode_timeout_seconds) return out;
    end(live, 'failed', turn, `${where} brought the episode's env time to ${live.envSeconds.toFixed(2)} s, over custom_envs.${spec.tag}.episode_timeout_seconds = ${cfg.episode_timeout_seconds}`);
  } catch (err) {
    end(live, 'failed', turn, `${where} threw: ${err instanceof Error ? err.message : String(err)}`);
  }
  return null;
}

/**
 * Stops the unfinished members of every group that has a failed member, or `keep` finished ones
 * (the first group_size finishers of group_size_redundancy; SPEC.md §2 EnvManagerConfig).
 */
function settleGroups(groups: Map<string, Live[]>, keep: number, turn: number): void {
  for (const members of groups.values()) {
    const failed = members.some((l) => l.status === 'failed');
    const finished = members.filter((l) => l.status === 'finished').length;
    if (failed || finished >= keep) for (const l of members) if (l.status === null) end(l, 'cut', turn);
  }
}

/**
 * Plays the episodes to their end and returns one outcome per spec, in spec order. An episode
 * finishes when the env terminates, after custom_envs.<tag>.max_steps turns (truncated), or when the
 * context reaches sequence_length (the unfinished turn is dropped, truncated).
 * @param keepPerGroup once this many members of a trajGroupId have finished, its others are cut
 * @throws Error from createEnv when a tag has no custom_envs entry or a bad env_config
 * @throws ConfigError when sequence_length cannot hold the first prompt and one reply
 */
export async function playEpisodes(specs: EpisodeSpec[], opts: ManagerOptions, keepPerGroup = Infinity): Promise<EpisodeOutcome[]> {
  const { tokenizer } = opts;
  const stopIds = new Set(tokenizer.eosIds);
  const groups = new Map<string, Live[]>();
  const lives: Live[] = [];
  for (const spec of specs) {
    const cfg = opts.customEnvs[spec.tag];
    if (!cfg) throw new Error(`tag ${JSON.stringify(spec.tag)} has no custom_envs entry`);
    const enableThink = usesThinkPattern(cfg.env_config);
    const live: Live = {
      spec, cfg, enableThink, env: createEnv(cfg.env_type, cfg.env_config, { envId: spec.envId, enableThink }),
      rng: new Rng(...spec.rngParts), chat: new EpisodeChat(tokenizer, cfg.agent_system_template), ids: [], mask: [], logprobs: [], pending: [], observation: '', turns: [],
      score: 0, success: false, truncated: false, envSeconds: 0, status: null, endedAt: -1,
    };
    groups.set(spec.trajGroupId, [...(groups.get(spec.trajGroupId) ?? []), live]);
    const first = guarded(live, 'reset', -1, () => live.env.reset(spec.seed));
    if (first) {
      live.observation = first.observation;
      live.pending = tokenizer.encode(live.chat.prompt(firstUserMessage(first.info.env_instruction, userContent(live))));
    }
    lives.push(live);
    // Resets can be slow (large Sokoban rooms): report progress so the activity's heartbeats go out.
    if (opts.onTurn) await opts.onTurn(-1, lives.length);
  }
  settleGroups(groups, keepPerGroup, -1);

  try {
    for (let turn = 0; ; turn++) {
      const active = lives.filter((l) => l.status === null);
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
      for (const l of active) if (!rows.includes(l)) truncate(l, turn);
      if (rows.length > 0) {
        const out = await opts.policy.generate({
          contexts: rows.map((l) => [...l.ids, ...l.pending]),
          maxNewTokens: budgets.filter((b) => b > 0),
          rngs: rows.map((l) => l.rng),
          envs: rows.map((l) => ({ actionNames: l.env.actionNames, solve: l.env.solve?.bind(l.env), enableThink: l.enableThink })),
          rowIds: rows.map((l) => lives.indexOf(l)),
        });
        rows.forEach((l, i) => stepLive(l, out.tokens[i], out.logprobs[i], turn, opts, stopIds));
      }
      settleGroups(groups, keepPerGroup, turn);
      if (opts.onTurn && rows.length > 0) await opts.onTurn(turn, rows.length);
    }
  } finally {
    opts.policy.endEpisodes?.(); // the model policy's KV caches of these episodes
  }

  return lives.map((l) => ({
    trajectory: {
      trajGroupId: l.spec.trajGroupId,
      trajId: `${l.spec.trajGroupId}_${l.spec.envId}`,
      tag: l.spec.tag, groupId: l.spec.groupId, envId: l.spec.envId, seed: l.spec.seed,
      split: opts.split, step: opts.step,
      inputIds: l.ids, responseMask: l.mask, sampleLogprobs: l.logprobs, turns: l.turns,
      episodeScore: l.score, success: l.success, truncated: l.truncated,
    },
    status: l.status!, endedAt: l.endedAt, ...(l.error === undefined ? {} : { error: l.error }),
  }));
}

/** Appends one sampled reply to an episode and steps its env (SPEC.md §4.2-4.5). */
function stepLive(l: Live, tokens: number[], logprobs: number[], turn: number, opts: ManagerOptions, stopIds: ReadonlySet<number>): void {
  const closed = tokens.length > 0 && stopIds.has(tokens[tokens.length - 1]);
  if (!closed && l.ids.length + l.pending.length + tokens.length >= opts.sequenceLength) return truncate(l, turn); // the unfinished turn is dropped
  l.ids.push(...l.pending, ...tokens);
  l.mask.push(...l.pending.map(() => 0), ...tokens.map(() => 1));
  l.logprobs.push(...l.pending.map(() => 0), ...logprobs);
  l.chat.reply(tokens);
  const response = opts.tokenizer.decode(tokens, false);
  const result = guarded(l, `step ${l.turns.length + 1}`, turn, () => l.env.step(response));
  if (!result) return;
  l.turns.push({
    observation: l.observation, response, action: parseAction(response, l.env.actionNames, { enableThink: l.enableThink }).action,
    reward: result.reward, actionIsValid: result.info.action_is_valid, actionIsEffective: result.info.action_is_effective,
  });
  l.score += result.reward;
  l.success = result.info.success;
  l.observation = result.observation;
  if (result.terminated) end(l, 'finished', turn);
  else if (l.turns.length >= l.cfg.max_steps) truncate(l, turn);
  else l.pending = opts.tokenizer.encode(l.chat.prompt(userContent(l)));
}

/**
 * Plays the episodes and returns their trajectories in spec order (no group bookkeeping; the warm-up
 * bench and tests use it). Same errors as playEpisodes, and throws the first env failure as an Error.
 */
export async function runEpisodes(specs: EpisodeSpec[], opts: ManagerOptions): Promise<Trajectory[]> {
  const outcomes = await playEpisodes(specs, opts);
  const failed = outcomes.find((o) => o.status === 'failed');
  if (failed) throw new Error(failed.error);
  return outcomes.map((o) => o.trajectory);
}
