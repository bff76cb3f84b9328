/**
 * What every env is (docs/numerics.md §4, docs/envs.md): Gymnasium-style `reset(seed)` then `step(responseText)` until
 * `terminated`, and the answer parsing they share. Envs take the model's RAW response text (special
 * tokens, <think> blocks and all) and parse the action themselves, as ROLL's envs do
 * (roll/pipeline/agentic/env/*, parse_action_utils.py).
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

/** A value, or a promise of it: what an env call returns (in-process envs return at once, remote ones later). */
export type Awaitable<T> = T | Promise<T>;

/** Result of `reset`: the first observation and the env's instruction (shown once, before the first observation). */
export interface ResetResult {
  observation: string;
  info: { env_instruction: string };
}

/**
 * A text environment. Not thread-safe; one instance per env id. `reset` and `step` may return promises (an env
 * served by another process, openenv.ts); the rollout awaits them, bounded in time. The built-in envs compute in
 * process and return at once (SyncEnv).
 */
export interface Env {
  /** The registry name, e.g. 'frozen_lake' (ROLL/RAGEN env_type). */
  readonly envType: string;
  /** Canonical action names; parsing matches them case-insensitively (docs/numerics.md §4.4). */
  readonly actionNames: readonly string[];
  /**
   * Starts an episode. Deterministic for a seed: the same seed gives the same initial state, so all
   * members of an env group (which share the seed, docs/numerics.md §3) start from the same state.
   * @param seed non-negative safe integer; throws RangeError otherwise.
   */
  reset(seed: number): Awaitable<ResetResult>;
  /**
   * Applies the raw model response. Throws Error (or rejects) when called before `reset` or after the episode
   * terminated.
   */
  step(responseText: string): Awaitable<StepResult>;
  /**
   * Releases what the episode holds outside this process (a server session); called when an episode ends,
   * fails or is cut, and when the rollout ends. Idempotent; never throws. In-process envs have none.
   */
  close?(): void;
  /** Text rendering of the current state (same text as the latest observation's state part). */
  render(): string;
  /**
   * A shortest action sequence (canonical action names) from the current state to success, found by
   * BFS over the env's own transition rules (deterministic envs only), or null when none exists or the
   * env cannot plan (e.g. slippery FrozenLake). Used by tests and by the `warmup: solver` demonstrations.
   */
  solve?(): string[] | null;
}

/** An env whose calls return at once (every built-in env; the wrapper envs of the tests). */
export interface SyncEnv extends Env {
  reset(seed: number): ResetResult;
  step(responseText: string): StepResult;
}

/**
 * Per-instance options passed by the rollout manager to `createEnv` (not part of the YAML env_config).
 * `envId`: the env's id within the pool (docs/numerics.md §3); stochastic transitions/payouts are drawn from a
 * stream seeded by (reset seed, envId) so members of a group start identically but their random
 * outcomes are independent-looking (and still replayable). Omitted: the stream depends on the seed
 * only, so group members that act identically get identical outcomes (RAGEN's behaviour).
 * `enableThink`: parse with the `<think>...</think><answer>...</answer>` pattern (docs/numerics.md §4.4).
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

// Answer parsing (docs/numerics.md §4.4; ROLL parse_action_utils.py default_parser_action_func): strip the
// ChatML special tokens, take the FIRST match of `<answer>(.*?)</answer>` (or, with the think pattern,
// `<think>(.*?)</think>\s*<answer>(.*?)</answer>`), trim it, and match it case-insensitively and exactly
// against the action names. Dot matches newlines (like Python's re.DOTALL), so a multi-line <think> block parses.

/** Special tokens removed before parsing (Qwen ChatML; docs/numerics.md §4.1, §4.3). */
export const SPECIAL_TOKENS: readonly string[] = ['<|im_end|>', '<|endoftext|>', '<|im_start|>'];

const ANSWER_RE = /<answer>([\s\S]*?)<\/answer>/;
const THINK_ANSWER_RE = /<think>([\s\S]*?)<\/think>\s*<answer>([\s\S]*?)<\/answer>/;

/** Result of `parseAction`. `action`: canonical action name or null (invalid). `answer`: the trimmed
 * text between the answer tags (undefined when no tags matched). `think`: trimmed think text (think
 * pattern only). */
export interface ParsedAction {
  action: string | null;
  answer?: string;
  think?: string;
}

/** Options of `parseAction`. `enableThink`: require the think pattern (default false). */
export interface ParseOptions {
  enableThink?: boolean;
}

/** Removes every occurrence of the special tokens (SPECIAL_TOKENS) from `text`. */
export function stripSpecialTokens(text: string): string {
  let out = text;
  for (const tok of SPECIAL_TOKENS) out = out.split(tok).join('');
  return out;
}

/**
 * Parses a raw model response into an action.
 * @param text raw response text (may contain special tokens and a <think> block)
 * @param actionNames canonical action names, e.g. ['Left', 'Down', 'Right', 'Up']
 * @returns `{ action }` with the canonical name (the first listed when names differ only by case),
 *          or `action: null` when no tags match or the answer is not an action name.
 */
export function parseAction(text: string, actionNames: readonly string[], opts: ParseOptions = {}): ParsedAction {
  const clean = stripSpecialTokens(text);
  let answer: string;
  let think: string | undefined;
  if (opts.enableThink) {
    const m = THINK_ANSWER_RE.exec(clean);
    if (!m) return { action: null };
    think = m[1].trim();
    answer = m[2].trim();
  } else {
    const m = ANSWER_RE.exec(clean);
    if (!m) return { action: null };
    answer = m[1].trim();
  }
  const lower = answer.toLowerCase();
  const action = actionNames.find((name) => name.toLowerCase() === lower) ?? null;
  return think === undefined ? { action, answer } : { action, answer, think };
}

/**
 * The step result of an answer that did not parse (docs/numerics.md §4.4, docs/envs.md): reward = format_penalty (0 or
 * negative), state unchanged, every flag false, and the penalty reported as the `format_penalty` metric
 * (ROLL's metric of the same name).
 * @param observation what the env shows next (FrozenLake: the unchanged board)
 * @param terminated whether the episode ends anyway (one-turn envs)
 */
export function invalidAnswer(observation: string, penalty: number, terminated: boolean): StepResult {
  return {
    observation,
    reward: penalty,
    terminated,
    info: { success: false, action_is_valid: false, action_is_effective: false, format_penalty: penalty },
  };
}
