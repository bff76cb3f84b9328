/**
 * The environment contract shared by every env (SPEC.md §4, §8). Gymnasium-style: `reset(seed)` then
 * `step(responseText)` until `terminated`. Envs take the model's RAW response text (special tokens,
 * <think> blocks and all) and parse the action themselves (SPEC.md §4.4, src/envs/parse.ts), as ROLL's
 * envs do (roll/pipeline/agentic/env/*, parse_action_utils.py).
 */

/**
 * Per-step info. `success`: the episode goal is reached (meaningful on the last turn);
 * `action_is_valid`: the response parsed to a known action; `action_is_effective`: the action changed
 * the env state (FrozenLake: the player moved). Extra numeric/boolean metrics may be added per env
 * (e.g. `format_penalty`: the penalty applied on this step, 0 or a negative reward).
 */
export interface EnvInfo {
  success: boolean;
  action_is_valid: boolean;
  action_is_effective: boolean;
  [metric: string]: number | boolean;
}

/** Result of one `step`. `reward` is in env reward units (FrozenLake: 1 at goal; format penalties negative). */
export interface StepResult {
  observation: string;
  reward: number;
  terminated: boolean;
  info: EnvInfo;
}

/** A text environment. Not thread-safe; one instance per env id. */
export interface Env {
  /** The registry name, e.g. 'frozen_lake' (ROLL/RAGEN env_type). */
  readonly envType: string;
  /** Canonical action names; parsing matches them case-insensitively (SPEC.md §4.4). */
  readonly actionNames: readonly string[];
  /**
   * Starts an episode. Deterministic for a seed: the same seed gives the same initial state, so all
   * members of an env group (which share the seed, SPEC.md §3) start from the same state.
   * @param seed non-negative safe integer; throws RangeError otherwise.
   */
  reset(seed: number): { observation: string; info: { env_instruction: string } };
  /**
   * Applies the raw model response. Throws Error when called before `reset` or after the episode
   * terminated.
   */
  step(responseText: string): StepResult;
  /** Text rendering of the current state (same text as the latest observation's state part). */
  render(): string;
  /**
   * A shortest action sequence (canonical action names) from the current state to success, found by
   * BFS over the env's own transition rules (deterministic envs only), or null when none exists or the
   * env cannot plan (e.g. slippery FrozenLake). Used by tests and by the `warmup: solver` demonstrations.
   */
  solve?(): string[] | null;
}

/**
 * Per-instance options passed by the rollout manager to `createEnv` (not part of the YAML env_config).
 * `envId`: the env's id within the pool (SPEC.md §3); stochastic transitions/payouts are drawn from a
 * stream seeded by (reset seed, envId) so members of a group start identically but their random
 * outcomes are independent-looking (and still replayable). Omitted: the stream depends on the seed
 * only, so group members that act identically get identical outcomes (RAGEN's behaviour).
 * `enableThink`: parse with the `<think>...</think><answer>...</answer>` pattern (SPEC.md §4.4).
 */
export interface EnvOptions {
  envId?: number;
  enableThink?: boolean;
}

/** Checks a reset seed; throws RangeError naming the value. */
export function checkSeed(envType: string, seed: number): void {
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new RangeError(`${envType}.reset: seed must be a non-negative safe integer, got ${String(seed)}`);
  }
}
