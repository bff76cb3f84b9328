/**
 * TrajEnvManager (docs/numerics.md §3-4; ROLL roll/pipeline/agentic/env_manager/traj_env_manager.py): plays env
 * groups as multi-turn episodes, all envs stepping in lockstep so each turn is one batched generation
 * call, and packs every episode into one token-in/token-out trajectory (ids, response mask, sampling
 * log-probs; packing.ts). Only complete groups come back, whatever the envs do.
 */

import type { CustomEnvConfig, RolloutGroup, Trajectory } from '../contract';
import { ConfigError } from '../contract';
import { parseAction } from '../envs/env';
import type { ChatTokenizer } from '../model/tokenizer';
import { Rng } from '../util/rng';
import { EpisodeChat, usesThinkPattern } from './chat';
import { type EpisodeOutcome, type EpisodeSpec, end, guarded, type Live, newEnv, settleGroups, startTagServers, truncate } from './episode';
import { firstPrompt, firstTurnProblem, replyBudget, userContent } from './first_turn';
import { appendTurn, emptyPacked } from './packing';
import { replacementGroup } from './plan';
import type { Policy } from './policy';

export type { EpisodeOutcome, EpisodeSpec } from './episode';

/** Settings shared by the batch. */
export interface ManagerOptions {
  policy: Policy;
  /** The model's tokenizer: its chat template renders the prompts, its eosIds end the replies. */
  tokenizer: ChatTokenizer;
  customEnvs: Record<string, CustomEnvConfig>;
  /** Max tokens of one whole trajectory (docs/configs.md sequence_length). */
  sequenceLength: number;
  /** generating_args.max_new_tokens (tokens per turn, before the per-tag cap). */
  maxNewTokens: number;
  split: 'train' | 'val';
  step: number;
  /** Called after every env reset starts (turn -1, active = envs reset so far; a remote env's may still be on its way) and every turn (heartbeat and yield point for activities). */
  onTurn?: (turn: number, active: number) => Promise<void>;
}

// The env pool of one rollout activity (docs/numerics.md §3):
// - group_size_redundancy (ROLL EnvManagerConfig): each group runs group_size + redundancy envs and keeps
//   the first group_size finishers, fewest lockstep turns first, ties by env id; the others are stopped
//   once enough have finished and are dropped before the trajectories are stored.
// - A failed episode (its env threw or rejected in reset or step, or its env time went over the tag's
//   episode_timeout_seconds; episode.ts) fails its WHOLE group, which is replaced by a fresh group with a seed derived
//   from the old one (plan.ts replacementGroup), up to MAX_GROUP_ATTEMPTS plays in all; then the group is
//   dropped. Failures are counted and their messages returned, never thrown.

/** Plays of one group before it is dropped: the first one and up to two replacements. */
export const MAX_GROUP_ATTEMPTS = 3;

/** What the pool did besides playing: the counts become env/* metrics (totals per step). */
export interface PoolStats {
  /** Episodes whose env threw or ran over its time budget. */
  failedEpisodes: number;
  /** Groups played again from a fresh seed after a failure. */
  replacedGroups: number;
  /** Groups given up after MAX_GROUP_ATTEMPTS failed plays (not in the batch). */
  droppedGroups: number;
}

/** Output of runGroups. */
export interface PoolResult {
  /** group_size trajectories per kept group, groups in input order, members by env id. */
  trajectories: Trajectory[];
  stats: PoolStats;
  /** One message per failed episode: tag, env id, group, seed and what went wrong. */
  errors: string[];
}

/** Group sizes of the env manager that planned the groups. */
export interface PoolOptions extends ManagerOptions {
  groupSize: number;
  /** group_size_redundancy: extra envs per group. */
  redundancy: number;
}

/** The kept members of a group whose play did not fail: the first groupSize finishers. */
function firstFinishers(outcomes: EpisodeOutcome[], groupSize: number): Trajectory[] {
  return outcomes
    .filter((o) => o.status === 'finished')
    .sort((a, b) => a.endedAt - b.endedAt || a.trajectory.envId - b.trajectory.envId)
    .slice(0, groupSize)
    .map((o) => o.trajectory)
    .sort((a, b) => a.envId - b.envId);
}

/**
 * Plays the groups; member j of group g has env id g * (groupSize + redundancy) + j and samples
 * from Rng(...group.stream, envId). Replacement plays run as later lockstep batches.
 * @throws only what playEpisodes throws for a bad config (never for an env failure)
 */
export async function runGroups(groups: RolloutGroup[], opts: PoolOptions): Promise<PoolResult> {
  const perGroup = opts.groupSize + opts.redundancy;
  const kept: Trajectory[][] = groups.map(() => []);
  const stats: PoolStats = { failedEpisodes: 0, replacedGroups: 0, droppedGroups: 0 };
  const errors: string[] = [];
  let pending = groups.map((group, index) => ({ group, index, attempt: 1 }));
  while (pending.length > 0) {
    const specs = pending.flatMap(({ group }) =>
      Array.from({ length: perGroup }, (_, j) => {
        const envId = group.groupId * perGroup + j;
        return {
          tag: group.tag,
          groupId: group.groupId,
          envId,
          seed: group.seed,
          trajGroupId: group.trajGroupId,
          rngParts: [...group.stream, envId],
        };
      }),
    );
    const outcomes = await playEpisodes(specs, opts, opts.groupSize);
    const next: typeof pending = [];
    pending.forEach((p, k) => {
      const mine = outcomes.slice(k * perGroup, (k + 1) * perGroup);
      const failures = mine.filter((o) => o.status === 'failed');
      if (failures.length === 0) {
        kept[p.index] = firstFinishers(mine, opts.groupSize);
        return;
      }
      stats.failedEpisodes += failures.length;
      errors.push(...failures.map((o) => o.error!));
      if (p.attempt < MAX_GROUP_ATTEMPTS) {
        stats.replacedGroups++;
        next.push({ group: replacementGroup(p.group), index: p.index, attempt: p.attempt + 1 });
      } else stats.droppedGroups++;
    });
    pending = next;
  }
  return { trajectories: kept.flat(), stats, errors };
}

/**
 * Plays the episodes to their end and returns one outcome per spec, in spec order. An episode
 * finishes when the env terminates, after custom_envs.<tag>.max_steps turns (truncated), or when the
 * context reaches sequence_length (the unfinished turn is dropped, truncated).
 * @param keepPerGroup once this many members of a trajGroupId have finished, its others are cut
 * @throws Error when a tag has no custom_envs entry
 * @throws EnvFailureError when an env cannot be created, or a tag's env server (env_config.command) not started
 * @throws ConfigError when sequence_length cannot hold the first prompt and one reply
 */
export async function playEpisodes(specs: EpisodeSpec[], opts: ManagerOptions, keepPerGroup = Infinity): Promise<EpisodeOutcome[]> {
  const lives: Live[] = [];
  try {
    await playLockstep(specs, opts, keepPerGroup, lives);
  } finally {
    opts.policy.endEpisodes?.(); // the model policy's KV caches of these episodes
    for (const l of lives) l.env.close?.(); // a remote env's sessions, whatever happened
  }
  return lives.map((l) => ({
    trajectory: {
      trajGroupId: l.spec.trajGroupId,
      trajId: `${l.spec.trajGroupId}_${l.spec.envId}`,
      tag: l.spec.tag,
      groupId: l.spec.groupId,
      envId: l.spec.envId,
      seed: l.spec.seed,
      split: opts.split,
      step: opts.step,
      inputIds: l.packed.inputIds,
      responseMask: l.packed.responseMask,
      sampleLogprobs: l.packed.sampleLogprobs,
      turns: l.turns,
      episodeScore: l.score,
      success: l.success,
      truncated: l.truncated,
      ...(l.truncatedBy === undefined ? {} : { truncatedBy: l.truncatedBy }),
    },
    status: l.status!,
    endedAt: l.endedAt,
    ...(l.error === undefined ? {} : { error: l.error }),
  }));
}

/**
 * Resets the envs (each to its spec's seed; remote envs all at once), then plays lockstep turns until every
 * episode has ended; `lives` gets one entry per spec as its env is created. In a turn the envs of all rows
 * step at once; each episode's records depend only on its own env, so the order they settle in changes nothing.
 */
async function playLockstep(specs: EpisodeSpec[], opts: ManagerOptions, keepPerGroup: number, lives: Live[]): Promise<void> {
  const { tokenizer } = opts;
  const stopIds = new Set(tokenizer.eosIds);
  const groups = new Map<string, Live[]>();
  const resets: Promise<void>[] = [];
  for (const tag of new Set(specs.map((s) => s.tag))) {
    const cfg = opts.customEnvs[tag];
    if (cfg) await startTagServers(tag, cfg);
  }
  for (const spec of specs) {
    const cfg = opts.customEnvs[spec.tag];
    if (!cfg) throw new Error(`tag ${JSON.stringify(spec.tag)} has no custom_envs entry`);
    const enableThink = usesThinkPattern(cfg.env_config);
    const live: Live = {
      spec,
      cfg,
      enableThink,
      env: newEnv(spec, cfg, enableThink),
      rng: new Rng(...spec.rngParts),
      chat: new EpisodeChat(tokenizer, cfg.agent_system_template),
      packed: emptyPacked(),
      pending: [],
      observation: '',
      turns: [],
      score: 0,
      success: false,
      truncated: false,
      envSeconds: 0,
      status: null,
      endedAt: -1,
    };
    groups.set(spec.trajGroupId, [...(groups.get(spec.trajGroupId) ?? []), live]);
    lives.push(live);
    resets.push(
      guarded(live, 'reset', -1, () => live.env.reset(spec.seed)).then((first) => {
        if (!first) return;
        live.observation = first.observation;
        live.pending = tokenizer.encode(firstPrompt(live.chat, cfg, enableThink, first));
      }),
    );
    // Resets can be slow (large Sokoban rooms): report progress so the activity's heartbeats go out.
    if (opts.onTurn) await opts.onTurn(-1, lives.length);
  }
  await Promise.all(resets);
  settleGroups(groups, keepPerGroup, -1);

  for (let turn = 0; ; turn++) {
    const active = lives.filter((l) => l.status === null);
    if (active.length === 0) break;
    const budgets = active.map((l) => {
      const room = opts.sequenceLength - l.packed.inputIds.length - l.pending.length;
      const want = replyBudget(l.cfg, opts.maxNewTokens);
      const problem = turn === 0 ? firstTurnProblem(opts.sequenceLength, l.spec.tag, l.pending.length, want) : null;
      if (problem) throw new ConfigError('sequence_length', [problem]); // preflight/first_turn.ts refuses this before a run
      return Math.min(want, room);
    });
    const rows = active.filter((_, i) => budgets[i] > 0);
    for (const l of active) if (!rows.includes(l)) truncate(l, turn, 'max_length');
    if (rows.length > 0) {
      const out = await opts.policy.generate({
        contexts: rows.map((l) => [...l.packed.inputIds, ...l.pending]),
        maxNewTokens: budgets.filter((b) => b > 0),
        rngs: rows.map((l) => l.rng),
        envs: rows.map((l) => ({ actionNames: l.env.actionNames, solve: l.env.solve?.bind(l.env), enableThink: l.enableThink })),
        rowIds: rows.map((l) => lives.indexOf(l)),
      });
      await Promise.all(rows.map((l, i) => stepLive(l, out.tokens[i], out.logprobs[i], out.learned?.[i] ?? true, turn, opts, stopIds)));
    }
    settleGroups(groups, keepPerGroup, turn);
    if (opts.onTurn && rows.length > 0) await opts.onTurn(turn, rows.length);
  }
}

/** Appends one sampled reply to an episode and steps its env (docs/numerics.md §4.2-4.5). */
async function stepLive(
  l: Live,
  tokens: number[],
  logprobs: number[],
  learned: boolean,
  turn: number,
  opts: ManagerOptions,
  stopIds: ReadonlySet<number>,
): Promise<void> {
  const closed = tokens.length > 0 && stopIds.has(tokens[tokens.length - 1]);
  if (!closed && l.packed.inputIds.length + l.pending.length + tokens.length >= opts.sequenceLength) {
    truncate(l, turn, 'max_length'); // the unfinished turn is dropped
    return;
  }
  appendTurn(l.packed, l.pending, tokens, logprobs, learned);
  l.chat.reply(tokens);
  const response = opts.tokenizer.decode(tokens, false);
  const result = await guarded(l, `step ${l.turns.length + 1}`, turn, () => l.env.step(response));
  if (!result) return;
  l.turns.push({
    observation: l.observation,
    response,
    action: parseAction(response, l.env.actionNames, { enableThink: l.enableThink }).action,
    reward: result.reward,
    actionIsValid: result.info.action_is_valid,
    actionIsEffective: result.info.action_is_effective,
  });
  l.score += result.reward;
  l.success = result.info.success;
  l.observation = result.observation;
  // An env that ends the episode at its own step cap says so in info.truncated (ROLL keeps the env's flag too).
  if (result.terminated && result.info.truncated === true) truncate(l, turn, 'max_steps');
  else if (result.terminated) end(l, 'finished', turn);
  else if (l.turns.length >= l.cfg.max_steps) truncate(l, turn, 'max_steps');
  else l.pending = opts.tokenizer.encode(l.chat.prompt(userContent(l.cfg, l.enableThink, l.turns.length, l.observation)));
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
