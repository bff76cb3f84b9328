/**
 * Two-armed bandit (docs/envs.md; RAGEN ragen/env/bandit, ROLL roll/pipeline/agentic/env/bandit).
 * One turn: the model picks one of two symbolically named arms (default: phoenix = low risk,
 * dragon = high risk; RAGEN's train and held-out name pairs by config); the arm order in the
 * observation is shuffled at each reset.
 */
import { show } from '../config/show';
import { EnvConfigError } from '../contract';
import { Rng } from '../util/rng';
import {
  checkKeys,
  checkRegex,
  checkTextRenderMode,
  getBool,
  getInstruction,
  getInt,
  getNumber,
  getString,
  type RawEnvConfig,
} from './config';
import { checkSeed, type Env, type EnvOptions, invalidAnswer, parseAction, type StepResult } from './env';

/**
 * RAGEN's arm-name pairs for generalisation, each (low-risk-sounding, high-risk-sounding): `train` pairs
 * for training tags, held-out `test` pairs for validation tags. Source: RAGEN (mll-lab-nu/RAGEN)
 * ragen/env/bandit/config.py ARM_NAMES, where the env draws one pair per reset from ARM_NAMES[split].
 */
export const BANDIT_ARM_PAIRS: Readonly<Record<'train' | 'test', ReadonlyArray<readonly [string, string]>>> = {
  train: [
    ['Teacher', 'Trader'],
    ['Nurse', 'StartupFounder'],
    ['Librarian', 'Investor'],
    ['Accountant', 'StockBroker'],
    ['Engineer', 'RealEstateAgent'],
    ['Pharmacist', 'Musician'],
    ['Clerk', 'Freelancer'],
    ['Technician', 'Youtuber'],
    ['Planner', 'Artist'],
    ['Postman', 'Pilot'],
    ['Banker', 'VentureCapitalist'],
    ['Gardener', 'Cryptominer'],
  ],
  test: [
    ['Receptionist', 'Explorer'],
    ['Archivist', 'Filmmaker'],
    ['Bookkeeper', 'Consultant'],
    ['SocialWorker', 'Photographer'],
    ['Mechanic', 'GameDesigner'],
    ['Secretary', 'Entrepreneur'],
    ['Cashier', 'DataScientist'],
    ['CivilServant', 'StartupAccelerator'],
  ],
};

/**
 * Validated bandit env_config. Defaults (docs/envs.md, ROLL): one arm pair (lo_arm_name 'phoenix',
 * hi_arm_name 'dragon'), lo_arm_score 0.1 (paid always; RAGEN paper 0.15), hi_arm_score 1.0 paid with
 * probability hi_arm_hiscore_prob 0.25, else hi_arm_loscore 0; format_penalty 0; env_instruction: the
 * compact default.
 * `arm_pairs` (instead of lo_arm_name/hi_arm_name): "train" or "test" (BANDIT_ARM_PAIRS, RAGEN's split)
 * or a list of [low-risk name, high-risk name] pairs; one pair is drawn per reset.
 * `reverse_risk` (default false): the reversed-risk variant, where the FIRST (low-risk-sounding) name of
 * each pair pays like the high arm and the second pays lo_arm_score (RAGEN-AI/RAGEN config/envs.yaml
 * BanditTest plays Trader as the low arm and Librarian as the high arm).
 * ROLL's env_config names are accepted too (ROLL/RAGEN BanditEnvConfig): `hi_arm_hiscore` for
 * hi_arm_score (give one of them); `action_space_start` (arms are answered by name, so unused),
 * `render_mode` (only "text") and `action_pattern` (checked to be a regular expression; answers are
 * parsed with the docs/numerics.md §4.4 patterns) are checked but not kept.
 */
export interface BanditConfig {
  /** [low-risk-sounding, high-risk-sounding] name pairs; one pair when lo/hi_arm_name are used. */
  arm_pairs: ReadonlyArray<readonly [string, string]>;
  reverse_risk: boolean;
  lo_arm_score: number;
  hi_arm_score: number;
  hi_arm_loscore: number;
  hi_arm_hiscore_prob: number;
  format_penalty: number;
  env_instruction: string | null;
}

/** Allowed env_config keys of bandit. */
export const BANDIT_KEYS = [
  'lo_arm_name',
  'hi_arm_name',
  'arm_pairs',
  'reverse_risk',
  'lo_arm_score',
  'hi_arm_score',
  'hi_arm_loscore',
  'hi_arm_hiscore_prob',
  'format_penalty',
  'env_instruction',
  'hi_arm_hiscore',
  'action_space_start',
  'render_mode',
  'action_pattern',
] as const;

const ARM_NAME = /^[A-Za-z][A-Za-z0-9_-]*$/;
const ARM_NAME_WHAT = 'a word of letters, digits, _ or - starting with a letter';

/** Checks the i-th pair of an arm_pairs list: two words that differ case-insensitively. */
function checkPair(where: string, pair: unknown, i: number): readonly [string, string] {
  const ok = Array.isArray(pair) && pair.length === 2 && pair.every((name) => typeof name === 'string' && ARM_NAME.test(name));
  if (!ok) {
    throw new EnvConfigError('arm_pairs', `${where}: arm_pairs[${i}] must be two names, each ${ARM_NAME_WHAT}, got ${show(pair)}`);
  }
  const [lo, hi] = pair as [string, string];
  if (lo.toLowerCase() === hi.toLowerCase()) {
    throw new EnvConfigError(
      'arm_pairs',
      `${where}: the names of arm_pairs[${i}] must differ (case-insensitively), got "${lo}" and "${hi}"`,
    );
  }
  return [lo, hi];
}

function parseArmPairs(where: string, r: Record<string, unknown>): ReadonlyArray<readonly [string, string]> {
  const v = r.arm_pairs;
  if (v === undefined) {
    const lo = getString(where, r, 'lo_arm_name', 'phoenix', ARM_NAME, ARM_NAME_WHAT);
    const hi = getString(where, r, 'hi_arm_name', 'dragon', ARM_NAME, ARM_NAME_WHAT);
    if (lo.toLowerCase() === hi.toLowerCase()) {
      throw new EnvConfigError(
        undefined,
        `${where}: hi_arm_name must differ (case-insensitively) from lo_arm_name, got "${lo}" and "${hi}"`,
      );
    }
    return [[lo, hi]];
  }
  if (r.lo_arm_name !== undefined || r.hi_arm_name !== undefined) {
    throw new EnvConfigError(undefined, `${where}: give arm_pairs or lo_arm_name/hi_arm_name, not both`);
  }
  if (v === 'train' || v === 'test') return BANDIT_ARM_PAIRS[v];
  if (!Array.isArray(v) || v.length === 0) {
    throw new EnvConfigError(
      'arm_pairs',
      `${where}: arm_pairs must be "train", "test" or a non-empty list of [low-risk name, high-risk name] pairs, got ${show(v)}`,
    );
  }
  return v.map((pair: unknown, i) => checkPair(where, pair, i));
}

/** Validates a raw env_config. Throws EnvConfigError naming the key, the value and what is allowed. */
export function parseBanditConfig(raw: RawEnvConfig): BanditConfig {
  const where = 'env_config of bandit';
  const r = checkKeys(where, raw, BANDIT_KEYS);
  checkRegex(where, r, 'action_pattern');
  checkTextRenderMode(where, r);
  getInt(where, r, 'action_space_start', 1, 0, 1_000_000);
  if (r.hi_arm_score !== undefined && r.hi_arm_hiscore !== undefined) {
    throw new EnvConfigError(
      undefined,
      `${where}: give one of hi_arm_score and hi_arm_hiscore (ROLL's name), got ${show(r.hi_arm_score)} and ${show(r.hi_arm_hiscore)}`,
    );
  }
  const hiScoreKey = r.hi_arm_hiscore === undefined ? 'hi_arm_score' : 'hi_arm_hiscore';
  return {
    arm_pairs: parseArmPairs(where, r),
    reverse_risk: getBool(where, r, 'reverse_risk', false),
    lo_arm_score: getNumber(where, r, 'lo_arm_score', 0.1),
    hi_arm_score: getNumber(where, r, hiScoreKey, 1.0),
    hi_arm_loscore: getNumber(where, r, 'hi_arm_loscore', 0),
    hi_arm_hiscore_prob: getNumber(where, r, 'hi_arm_hiscore_prob', 0.25, 0, 1),
    format_penalty: getNumber(where, r, 'format_penalty', 0),
    env_instruction: getInstruction(where, r),
  };
}

/** Default instruction: short on purpose (the quickstart model uses a char tokenizer). */
export const BANDIT_INSTRUCTION = "Bandit. Each arm's payout fits its name. Pick one: <answer>NAME</answer>.";

/**
 * Bandit env. At reset: the arm pair is config.arm_pairs[Rng('bandit/pair', seed).int(n)] and the
 * observation "Arms: A, B" lists it in the order from Rng('bandit/order', seed) (both the same for all
 * members of an env group). The high arm is the pair's second name, or its first with reverse_risk.
 * Payout of the high arm drawn from Rng('bandit/payout', seed, envId) when `envId` is given, so group
 * members that all pick the high arm get independent but replayable payouts (better in-group variance);
 * without envId the stream is Rng('bandit/payout', seed) and identical picks get identical payouts
 * (RAGEN: its env is seeded by the reset seed only).
 * Step: reward = the arm's payout, observation "{name}: {reward} points", success = chose the high
 * arm; an invalid answer gives reward format_penalty and observation "Invalid answer.". Always
 * terminates after one step.
 */
export class BanditEnv implements Env {
  readonly envType = 'bandit';
  readonly config: BanditConfig;
  private readonly options: EnvOptions;
  private pair: readonly [string, string];
  private payout: Rng | null = null;
  private done = false;
  private lastObservation = '';

  /** @param config raw env_config (validated here; throws Error on a bad key/value) */
  constructor(config: RawEnvConfig = {}, options: EnvOptions = {}) {
    this.config = parseBanditConfig(config);
    this.options = options;
    this.pair = this.config.arm_pairs[0];
  }

  /** The two arm names of the current episode's pair (the first configured pair before any reset). */
  get actionNames(): readonly string[] {
    return this.pair;
  }

  /** The name of the high arm (pays hi_arm_score with probability hi_arm_hiscore_prob). */
  get highArm(): string {
    return this.pair[this.config.reverse_risk ? 0 : 1];
  }

  reset(seed: number): { observation: string; info: { env_instruction: string } } {
    checkSeed(this.envType, seed);
    const pairs = this.config.arm_pairs;
    this.pair = pairs[new Rng('bandit/pair', seed).int(pairs.length)];
    const order = new Rng('bandit/order', seed).shuffle([...this.pair]);
    this.payout = this.options.envId === undefined ? new Rng('bandit/payout', seed) : new Rng('bandit/payout', seed, this.options.envId);
    this.done = false;
    this.lastObservation = `Arms: ${order.join(', ')}`;
    return { observation: this.lastObservation, info: { env_instruction: this.config.env_instruction ?? BANDIT_INSTRUCTION } };
  }

  step(responseText: string): StepResult {
    if (this.payout === null) throw new Error('bandit.step: call reset(seed) first');
    if (this.done) throw new Error('bandit.step: the episode has terminated; call reset(seed)');
    this.done = true;
    const { action } = parseAction(responseText, this.actionNames, { enableThink: this.options.enableThink });
    if (action === null) {
      this.lastObservation = 'Invalid answer.';
      return invalidAnswer(this.lastObservation, this.config.format_penalty, true);
    }
    const c = this.config;
    const high = action === this.highArm;
    const reward = high ? (this.payout.next() < c.hi_arm_hiscore_prob ? c.hi_arm_score : c.hi_arm_loscore) : c.lo_arm_score;
    this.lastObservation = `${action}: ${reward} points`;
    return {
      observation: this.lastObservation,
      reward,
      terminated: true,
      info: { success: high, action_is_valid: true, action_is_effective: true, format_penalty: 0 },
    };
  }

  render(): string {
    return this.lastObservation;
  }
}
