/**
 * One episode of a lockstep batch (manager.ts): its state, how it ends, and its env calls under the tag's
 * time budget. An env that throws or rejects (reset or step), or runs over its tag's episode_timeout_seconds,
 * fails its episode and stops its whole group (trajGroupId). An episode that ends in any way releases its env
 * (Env.close: a remote env's server session).
 */

import type { CustomEnvConfig, Trajectory, TruncationCause, TurnRecord } from '../contract';
import { EnvFailureError } from '../contract';
import type { Awaitable, Env } from '../envs/env';
import { createEnv, startEnvServers } from '../envs/registry';
import type { Rng } from '../util/rng';
import type { EpisodeChat } from './chat';
import type { PackedTokens } from './packing';

/** One env of the batch: where it sits and how it starts. */
export interface EpisodeSpec {
  tag: string;
  groupId: number;
  envId: number;
  /** Reset seed, equal for every member of a group (docs/numerics.md §3). */
  seed: number;
  /** "{tag}_{group_id}_{episode}_{seed}". */
  trajGroupId: string;
  /** Seed parts of this episode's sampling stream, e.g. [runSeed, split, step, envId]. */
  rngParts: Array<number | string>;
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

/** An episode being played. */
export interface Live {
  spec: EpisodeSpec;
  env: Env;
  cfg: CustomEnvConfig;
  enableThink: boolean;
  rng: Rng;
  chat: EpisodeChat;
  /** The episode's tokens so far (packing.ts). */
  packed: PackedTokens;
  /** The next turn's prompt tokens, not yet in `packed`. */
  pending: number[];
  observation: string;
  turns: TurnRecord[];
  score: number;
  success: boolean;
  truncated: boolean;
  truncatedBy?: TruncationCause;
  /** Wall seconds spent in env.reset / env.step so far. */
  envSeconds: number;
  status: EpisodeOutcome['status'] | null;
  endedAt: number;
  error?: string;
}

export function end(live: Live, status: EpisodeOutcome['status'], turn: number, error?: string): void {
  Object.assign(live, { status, endedAt: turn, error });
  live.env.close?.();
}

/** Ends an episode by the turn cap (`max_steps`) or the sequence_length cut (`max_length`). */
export function truncate(live: Live, turn: number, cause: TruncationCause): void {
  Object.assign(live, { truncated: true, truncatedBy: cause });
  end(live, 'finished', turn);
}

const TIMED_OUT = Symbol('timed out');

/** The promise's value, or TIMED_OUT when it has not settled within `ms` (its later rejection is then nobody's). */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, ms));
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs an env call, timing it against the episode budget (episode_timeout_seconds). Returns its result, or
 * null after marking the episode failed: the env threw or rejected, or the episode's env time went over the
 * budget. A call that returns at once (an in-process env) cannot be preempted, so its time is checked once it
 * returns; a promise (a remote env) gets what is left of the budget and fails the episode when it has not
 * settled by then, so a silent server never holds the rollout longer than that.
 */
export async function guarded<T>(live: Live, what: string, turn: number, call: () => Awaitable<T>): Promise<T | null> {
  const { spec, cfg } = live;
  const where = `${spec.tag} env ${spec.envId} (group ${spec.groupId}, seed ${spec.seed}): ${what}`;
  const budget = cfg.episode_timeout_seconds;
  const started = performance.now();
  try {
    const out = call();
    const left = budget - live.envSeconds;
    const value = out instanceof Promise ? await within(out, left * 1000) : out;
    live.envSeconds += (performance.now() - started) / 1000;
    if (value === TIMED_OUT) {
      end(
        live,
        'failed',
        turn,
        `${where} did not settle within the ${left.toFixed(2)} s left of custom_envs.${spec.tag}.episode_timeout_seconds = ${budget}`,
      );
    } else if (live.envSeconds <= budget) return value;
    else {
      end(
        live,
        'failed',
        turn,
        `${where} brought the episode's env time to ${live.envSeconds.toFixed(2)} s, over custom_envs.${spec.tag}.episode_timeout_seconds = ${budget}`,
      );
    }
  } catch (err) {
    end(live, 'failed', turn, `${where} threw: ${err instanceof Error ? err.message : String(err)}`);
  }
  return null;
}

/**
 * Stops the unfinished members of every group that has a failed member, or `keep` finished ones
 * (the first group_size finishers of group_size_redundancy; docs/configs.md, ROLL EnvManagerConfig).
 */
export function settleGroups(groups: Map<string, Live[]>, keep: number, turn: number): void {
  for (const members of groups.values()) {
    const failed = members.some((l) => l.status === 'failed');
    const finished = members.filter((l) => l.status === 'finished').length;
    if (failed || finished >= keep) for (const l of members) if (l.status === null) end(l, 'cut', turn);
  }
}

/**
 * The env of one episode. Config validation created each tag's env once already, so one that cannot be
 * created here fails the same way on every attempt: an EnvFailureError (not retried), not a plain Error.
 */
export function newEnv(spec: EpisodeSpec, cfg: CustomEnvConfig, enableThink: boolean): Env {
  try {
    return createEnv(cfg.env_type, cfg.env_config, { envId: spec.envId, enableThink });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new EnvFailureError(`${spec.tag} env ${spec.envId} (group ${spec.groupId}, seed ${spec.seed}) could not be created: ${message}`);
  }
}

/**
 * Starts the servers a tag's env_config has this process run (an openenv command), unless they run already. One
 * that does not come up fails the tag's every episode alike: an EnvFailureError (not retried) naming the tag.
 */
export async function startTagServers(tag: string, cfg: CustomEnvConfig): Promise<void> {
  try {
    await startEnvServers(cfg.env_type, cfg.env_config);
  } catch (err) {
    throw new EnvFailureError(`${tag}: its env server could not be started: ${err instanceof Error ? err.message : String(err)}`);
  }
}
