/**
 * Two-armed bandit (SPEC.md §8; RAGEN ragen/env/bandit, ROLL roll/pipeline/agentic/env/bandit).
 * One turn: the model picks one of two symbolically named arms (train: phoenix = low risk,
 * dragon = high risk); the arm order in the observation is shuffled at each reset.
 */
import { Rng } from '../util/rng';
import { checkKeys, checkRegex, checkTextRenderMode, getInt, getNumber, getString, type RawEnvConfig } from './config';
import { parseAction } from './parse';
import { checkSeed, type Env, type EnvOptions, type StepResult } from './types';

/**
 * Validated bandit env_config. Defaults (SPEC.md §8, ROLL): lo_arm_name 'phoenix', hi_arm_name
 * 'dragon', lo_arm_score 0.1 (paid always; RAGEN paper 0.15), hi_arm_score 1.0 paid with probability
 * hi_arm_hiscore_prob 0.25, else hi_arm_loscore 0; format_penalty 0; env_instruction: compact default.
 * ROLL's env_config names are accepted too (ROLL/RAGEN BanditEnvConfig): `hi_arm_hiscore` for
 * hi_arm_score (give one of them); `action_space_start` (arms are answered by name, so unused),
 * `render_mode` (only "text") and `action_pattern` (checked to be a regular expression; answers are
 * parsed with the SPEC.md §4.4 patterns) are checked but not kept.
 */
export interface BanditConfig {
  lo_arm_name: string;
  hi_arm_name: string;
  lo_arm_score: number;
  hi_arm_score: number;
  hi_arm_loscore: number;
  hi_arm_hiscore_prob: number;
  format_penalty: number;
  env_instruction: string | null;
}

/** Allowed env_config keys of bandit. */
export const BANDIT_KEYS = [
  'lo_arm_name', 'hi_arm_name', 'lo_arm_score', 'hi_arm_score', 'hi_arm_loscore', 'hi_arm_hiscore_prob',
  'format_penalty', 'env_instruction', 'hi_arm_hiscore', 'action_space_start', 'render_mode', 'action_pattern',
] as const;

const ARM_NAME = /^[A-Za-z][A-Za-z0-9_-]*$/;

/** Validates a raw env_config. Throws Error naming the key, the value and what is allowed. */
export function parseBanditConfig(raw: RawEnvConfig): BanditConfig {
  const where = 'env_config of bandit';
  const r = checkKeys(where, raw, BANDIT_KEYS);
  checkRegex(where, r, 'action_pattern');
  checkTextRenderMode(where, r);
  getInt(where, r, 'action_space_start', 1, 0, 1_000_000);
  if (r.hi_arm_score !== undefined && r.hi_arm_hiscore !== undefined) {
    throw new Error(`${where}: give one of hi_arm_score and hi_arm_hiscore (ROLL's name), got ${String(r.hi_arm_score)} and ${String(r.hi_arm_hiscore)}`);
  }
  const hiScoreKey = r.hi_arm_hiscore === undefined ? 'hi_arm_score' : 'hi_arm_hiscore';
  const what = 'a word of letters, digits, _ or - starting with a letter';
  const cfg: BanditConfig = {
    lo_arm_name: getString(where, r, 'lo_arm_name', 'phoenix', ARM_NAME, what),
    hi_arm_name: getString(where, r, 'hi_arm_name', 'dragon', ARM_NAME, what),
    lo_arm_score: getNumber(where, r, 'lo_arm_score', 0.1),
    hi_arm_score: getNumber(where, r, hiScoreKey, 1.0),
    hi_arm_loscore: getNumber(where, r, 'hi_arm_loscore', 0),
    hi_arm_hiscore_prob: getNumber(where, r, 'hi_arm_hiscore_prob', 0.25, 0, 1),
    format_penalty: getNumber(where, r, 'format_penalty', 0),
    env_instruction: r.env_instruction === undefined ? null : getString(where, r, 'env_instruction', ''),
  };
  if (cfg.lo_arm_name.toLowerCase() === cfg.hi_arm_name.toLowerCase()) {
    throw new Error(`${where}: hi_arm_name must differ (case-insensitively) from lo_arm_name, got "${cfg.hi_arm_name}" for both`);
  }
  return cfg;
}

/** Default instruction: short on purpose (the quickstart model uses a char tokenizer). */
export const BANDIT_INSTRUCTION = "Bandit. Each arm's payout fits its name. Pick one: <answer>NAME</answer>.";

/**
 * Bandit env. Observation at reset: "Arms: A, B" with the order from Rng('bandit/order', seed)
 * (same for all members of an env group). Payout of the high arm drawn from Rng('bandit/payout',
 * seed, envId) when `envId` is given, so group members that all pick the high arm get independent
 * but replayable payouts (better in-group variance); without envId the stream is Rng('bandit/payout',
 * seed) and identical picks get identical payouts (RAGEN: its env is seeded by the reset seed only).
 * Step: reward = the arm's payout, observation "{name}: {reward} points", success = chose the high
 * arm; an invalid answer gives reward format_penalty and observation "Invalid answer.". Always
 * terminates after one step.
 */
export class BanditEnv implements Env {
  readonly envType = 'bandit';
  readonly actionNames: readonly string[];
  readonly config: BanditConfig;
  private readonly options: EnvOptions;
  private order: string[] = [];
  private payout: Rng | null = null;
  private done = false;
  private lastObservation = '';

  /** @param config raw env_config (validated here; throws Error on a bad key/value) */
  constructor(config: RawEnvConfig = {}, options: EnvOptions = {}) {
    this.config = parseBanditConfig(config);
    this.options = options;
    this.actionNames = [this.config.lo_arm_name, this.config.hi_arm_name];
  }

  reset(seed: number): { observation: string; info: { env_instruction: string } } {
    checkSeed(this.envType, seed);
    this.order = new Rng('bandit/order', seed).shuffle([...this.actionNames]);
    this.payout = this.options.envId === undefined
      ? new Rng('bandit/payout', seed)
      : new Rng('bandit/payout', seed, this.options.envId);
    this.done = false;
    this.lastObservation = `Arms: ${this.order.join(', ')}`;
    return { observation: this.lastObservation, info: { env_instruction: this.config.env_instruction ?? BANDIT_INSTRUCTION } };
  }

  step(responseText: string): StepResult {
    if (this.payout === null) throw new Error('bandit.step: call reset(seed) first');
    if (this.done) throw new Error('bandit.step: the episode has terminated; call reset(seed)');
    this.done = true;
    const { action } = parseAction(responseText, this.actionNames, { enableThink: this.options.enableThink });
    if (action === null) {
      const penalty = this.config.format_penalty;
      this.lastObservation = 'Invalid answer.';
      return {
        observation: this.lastObservation, reward: penalty, terminated: true,
        info: { success: false, action_is_valid: false, action_is_effective: false, format_penalty: penalty },
      };
    }
    const c = this.config;
    const high = action === c.hi_arm_name;
    const reward = high ? (this.payout.next() < c.hi_arm_hiscore_prob ? c.hi_arm_score : c.hi_arm_loscore) : c.lo_arm_score;
    this.lastObservation = `${action}: ${reward} points`;
    return {
      observation: this.lastObservation, reward, terminated: true,
      info: { success: high, action_is_valid: true, action_is_effective: true, format_penalty: 0 },
    };
  }

  render(): string {
    return this.lastObservation;
  }
}
