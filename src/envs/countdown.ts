/**
 * Countdown (docs/envs.md; RAGEN ragen/env/countdown/env.py): one turn. The observation gives a target
 * and 3 or 4 numbers; the answer is an arithmetic expression using each number exactly once. RAGEN
 * loads a data set and keeps the instances solvable with + and - alone; we generate such instances
 * from the reset seed instead (pick numbers, pick signs, target = signed sum, keep it when positive).
 */
import { Rng } from '../util/rng';
import { checkKeys, checkRegex, getInstruction, getInt, getNumber, type RawEnvConfig } from './config';
import { checkSeed, type Env, type EnvOptions, invalidAnswer, parseAction, type StepResult } from './env';

/**
 * Validated countdown env_config. Defaults: num_count 3 (numbers per instance, 3 or 4), max_number 99
 * (numbers are drawn uniformly from 1..max_number), format_score 0.1 (RAGEN: the right numbers, a wrong
 * value), format_penalty 0 (an answer that does not parse; RAGEN's invalid_act_score is -0.1),
 * env_instruction: the compact default. `action_pattern` is accepted and checked to be a regular
 * expression, but answers are parsed with the docs/numerics.md §4.4 patterns (as in the other envs).
 */
export interface CountdownConfig {
  num_count: number;
  max_number: number;
  format_score: number;
  format_penalty: number;
  env_instruction: string | null;
}

/** Allowed env_config keys of countdown. */
export const COUNTDOWN_KEYS = ['num_count', 'max_number', 'format_score', 'format_penalty', 'env_instruction', 'action_pattern'] as const;

/** Validates a raw env_config. Throws EnvConfigError naming the key, the value and what is allowed. */
export function parseCountdownConfig(raw: RawEnvConfig): CountdownConfig {
  const where = 'env_config of countdown';
  const r = checkKeys(where, raw, COUNTDOWN_KEYS);
  checkRegex(where, r, 'action_pattern');
  return {
    num_count: getInt(where, r, 'num_count', 3, 3, 4),
    max_number: getInt(where, r, 'max_number', 99, 1, 1_000_000),
    format_score: getNumber(where, r, 'format_score', 0.1, 0, 1),
    format_penalty: getNumber(where, r, 'format_penalty', 0),
    env_instruction: getInstruction(where, r),
  };
}

/** Default instruction: short on purpose (the quickstart model uses a char tokenizer). */
export const COUNTDOWN_INSTRUCTION =
  'Countdown. Use each number once with + - * / ( ) to reach the target. Answer <answer>expression</answer>.';

/** A Countdown instance: the numbers in observation order, the sign each was given, and the target. */
export interface CountdownInstance {
  nums: number[];
  /** +1 or -1 per number; sum(signs[i] * nums[i]) === target. */
  signs: number[];
  target: number;
}

/**
 * Draws an instance solvable with + and -: `count` numbers uniform in 1..maxNumber, a uniform sign for
 * each, target = the signed sum; redrawn (numbers and signs) until the target is positive. Every draw
 * has probability >= 1/16 of the all-plus signs, so the loop ends.
 */
export function generateCountdown(count: number, maxNumber: number, rng: Rng): CountdownInstance {
  for (;;) {
    const nums = Array.from({ length: count }, () => 1 + rng.int(maxNumber));
    const signs = nums.map(() => (rng.next() < 0.5 ? 1 : -1));
    const target = nums.reduce((acc, n, i) => acc + signs[i] * n, 0);
    if (target > 0) return { nums, signs, target };
  }
}

/** The +/- expression of an instance, positive terms first so it needs no unary minus: "5 + 2 - 3". */
export function countdownSolution(inst: CountdownInstance): string {
  const idx = inst.nums.map((_, i) => i);
  const order = [...idx.filter((i) => inst.signs[i] > 0), ...idx.filter((i) => inst.signs[i] < 0)];
  return order.map((i, k) => (k === 0 ? `${inst.nums[i]}` : `${inst.signs[i] > 0 ? '+' : '-'} ${inst.nums[i]}`)).join(' ');
}

function sameMultiset(a: number[], b: number[]): boolean {
  if (a.length !== b.length) return false;
  const x = [...a].sort((p, q) => p - q);
  const y = [...b].sort((p, q) => p - q);
  return x.every((v, i) => v === y[i]);
}

/**
 * The answer's arithmetic, evaluated by a small safe parser (docs/envs.md: "evaluate the expression
 * with a safe parser, never eval"; RAGEN uses Python eval). Recursive descent over this grammar (whitespace
 * allowed between tokens):
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/') unary)*
 *   unary   := '-' unary | primary
 *   primary := number | '(' expr ')'
 *   number  := digits ('.' digits)?
 * Anything else (letters, '=', '^', '**', unary '+', empty input, unbalanced parentheses) is invalid.
 */

/** Result of `evaluateArithmetic`: the value (IEEE double; x/0 gives ±Infinity or NaN) and the number
 * literals in the order written (unary minus is an operator, so "-3" contributes 3). */
export interface ArithResult {
  value: number;
  numbers: number[];
}

/** Longest accepted expression, in characters; longer input is invalid (bounds recursion depth). */
export const MAX_EXPRESSION_LENGTH = 1000;

const TOKEN = /\s*(\d+(?:\.\d+)?|[-+*/()])/y;

function tokenize(text: string): string[] | null {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    const start = TOKEN.lastIndex;
    const m = TOKEN.exec(text);
    if (m === null) return /^\s*$/.test(text.slice(start)) ? tokens : null;
    tokens.push(m[1]);
  }
  return tokens;
}

/**
 * Parses and evaluates an arithmetic expression.
 * @param text e.g. "(5 + 2) * 3 - -1"
 * @returns the value and the number literals, or null when the text is not an expression of the grammar
 *          above (or is longer than MAX_EXPRESSION_LENGTH). Never throws.
 */
export function evaluateArithmetic(text: string): ArithResult | null {
  if (text.length > MAX_EXPRESSION_LENGTH) return null;
  const tokens = tokenize(text);
  if (tokens === null || tokens.length === 0) return null;
  const numbers: number[] = [];
  let pos = 0;
  const peek = (): string | undefined => tokens[pos];

  // Each returns null on a syntax error; errors propagate up unchanged.
  const expr = (): number | null => {
    let left = term();
    while (left !== null && (peek() === '+' || peek() === '-')) {
      const op = tokens[pos++];
      const right = term();
      left = right === null ? null : op === '+' ? left + right : left - right;
    }
    return left;
  };
  const term = (): number | null => {
    let left = unary();
    while (left !== null && (peek() === '*' || peek() === '/')) {
      const op = tokens[pos++];
      const right = unary();
      left = right === null ? null : op === '*' ? left * right : left / right;
    }
    return left;
  };
  const unary = (): number | null => {
    if (peek() !== '-') return primary();
    pos++;
    const v = unary();
    return v === null ? null : -v;
  };
  const primary = (): number | null => {
    const tok = peek();
    if (tok === undefined) return null;
    pos++;
    if (tok === '(') {
      const v = expr();
      if (v === null || tokens[pos++] !== ')') return null;
      return v;
    }
    if (!/^\d/.test(tok)) return null;
    const n = Number(tok);
    numbers.push(n);
    return n;
  };

  const value = expr();
  if (value === null || pos !== tokens.length) return null;
  return { value, numbers };
}

/**
 * Countdown env. Instance: generateCountdown(num_count, max_number, Rng('countdown', seed)); observation
 * "Target: T, nums: [a, b, c]" (RAGEN's text). Step: the text inside <answer>...</answer> must parse as an
 * expression (evaluateArithmetic), else the answer is invalid (reward format_penalty, observation
 * "Invalid answer."). Score (RAGEN compute_reward): 0 unless the number literals are exactly the given
 * numbers as a multiset; then 1 if |value - target| < 1e-5, else format_score. success = the value is
 * right; action_is_effective = the numbers are right (RAGEN: score > 0); observation
 * "Your answer gets {score} points.". Always
 * terminates after one step. There are no fixed action names (`actionNames` is empty): the env parses
 * its own answer.
 */
export class CountdownEnv implements Env {
  readonly envType = 'countdown';
  readonly actionNames: readonly string[] = [];
  readonly config: CountdownConfig;
  private readonly options: EnvOptions;
  private instance: CountdownInstance | null = null;
  private done = false;
  private lastObservation = '';

  /** @param config raw env_config (validated here; throws Error on a bad key/value) */
  constructor(config: RawEnvConfig = {}, options: EnvOptions = {}) {
    this.config = parseCountdownConfig(config);
    this.options = options;
  }

  reset(seed: number): { observation: string; info: { env_instruction: string } } {
    checkSeed(this.envType, seed);
    this.instance = generateCountdown(this.config.num_count, this.config.max_number, new Rng('countdown', seed));
    this.done = false;
    this.lastObservation = `Target: ${this.instance.target}, nums: [${this.instance.nums.join(', ')}]`;
    return { observation: this.lastObservation, info: { env_instruction: this.config.env_instruction ?? COUNTDOWN_INSTRUCTION } };
  }

  step(responseText: string): StepResult {
    if (this.instance === null) throw new Error('countdown.step: call reset(seed) first');
    if (this.done) throw new Error('countdown.step: the episode has terminated; call reset(seed)');
    this.done = true;
    const { answer } = parseAction(responseText, this.actionNames, { enableThink: this.options.enableThink });
    const parsed = answer === undefined ? null : evaluateArithmetic(answer);
    if (parsed === null) {
      this.lastObservation = 'Invalid answer.';
      return invalidAnswer(this.lastObservation, this.config.format_penalty, true);
    }
    const numbersOk = sameMultiset(parsed.numbers, this.instance.nums);
    const correct = numbersOk && Math.abs(parsed.value - this.instance.target) < 1e-5;
    const score = correct ? 1 : numbersOk ? this.config.format_score : 0;
    this.lastObservation = `Your answer gets ${score} points.`;
    return {
      observation: this.lastObservation,
      reward: score,
      terminated: true,
      info: { success: correct, action_is_valid: true, action_is_effective: numbersOk, format_penalty: 0 },
    };
  }

  render(): string {
    return this.lastObservation;
  }

  /** The +/- expression that generated the instance, as a one-element list (countdownSolution); null
   * after the episode ended. Throws Error before the first reset. */
  solve(): string[] | null {
    if (this.instance === null) throw new Error('countdown.solve: call reset(seed) first');
    return this.done ? null : [countdownSolution(this.instance)];
  }
}
