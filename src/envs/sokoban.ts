/**
 * Sokoban text env (docs/envs.md; ROLL roll/pipeline/agentic/env/sokoban/env.py over gym-sokoban
 * SokobanEnv, RAGEN ragen/env/sokoban). A seeded room per reset and its BFS `solve()` (sokoban_room.ts),
 * gym-sokoban rewards, text render with a configurable symbol vocabulary.
 */
import { show } from '../config/show';
import { EnvConfigError } from '../contract';
import { checkKeys, checkRegex, checkTextRenderMode, getInstruction, getInt, getNumber, type RawEnvConfig } from './config';
import { checkSeed, type Env, type EnvOptions, parseAction, type StepResult } from './env';
import { cellDeltas, roomForSeed, SOKOBAN_ACTIONS, type SokobanState, solveSokoban, TARGET, tryMove, WALL } from './sokoban_room';

/**
 * Symbols by cell code 0..6: wall, empty, target, box on target, box, player, player on target
 * (docs/envs.md; ROLL/RAGEN GRID_LOOKUP).
 */
export const DEFAULT_GRID_LOOKUP: readonly string[] = ['#', '_', 'O', '√', 'X', 'P', 'S'];
/** The alternative vocabulary of ROLL's SokobanDifferentGridVocab (docs/envs.md): W . G C B A @. */
export const ALT_GRID_LOOKUP: readonly string[] = ['W', '.', 'G', 'C', 'B', 'A', '@'];
/** Meanings by cell code, the descriptions of ROLL's default grid_vocab. */
export const CELL_MEANINGS: readonly string[] = ['wall', 'empty', 'target', 'box on target', 'box', 'player', 'player on target'];

/**
 * Validated sokoban env_config (ROLL SokobanEnv / RAGEN SokobanEnvConfig key names).
 * `dim_room`: [rows, cols]; give it, or dim_x (rows) and dim_y (cols) together as RAGEN does
 * (dim_room = (dim_x, dim_y)); both forms must agree when given. Each side in [3, 64].
 * `num_boxes`: in [1, interior cells - 2]. `search_depth`: reverse-play depth in [2, 1000].
 * `max_steps`: env steps (invalid answers included) after which the episode ends, in [1, 1e6].
 * `grid_lookup`: symbols by code (ROLL's map {0: "#", ..., 6: "S"}: all 7 codes, one distinct
 * character each; ALT_GRID_LOOKUP for the alternative vocabulary). `grid_vocab`: the legend shown in
 * the instruction, symbol -> meaning, exactly the grid_lookup symbols; default CELL_MEANINGS.
 * Defaults: SimpleSokoban's room [6, 6] with 1 box (ROLL examples/config/traj_envs.yaml; ROLL's
 * SokobanEnv constructor itself defaults to gym-sokoban's 10x10 with 4 boxes and max_steps 20),
 * search_depth 300 (ROLL SokobanEnv, RAGEN SokobanEnvConfig), max_steps 100 (RAGEN SokobanEnvConfig;
 * ROLL's configs set it to max_actions_per_traj), format_penalty 0 (ROLL SokobanEnv; its configs use
 * -0.15), env_instruction null (absent or null: a compact default; "" = none). Also accepted as in
 * ROLL but not kept: `action_pattern` (checked to be a regular expression; answers are parsed with
 * the docs/numerics.md §4.4 patterns) and `render_mode` (only "text").
 */
export interface SokobanConfig {
  dim_room: [number, number];
  num_boxes: number;
  max_steps: number;
  search_depth: number;
  format_penalty: number;
  env_instruction: string | null;
  grid_lookup: readonly string[];
  grid_vocab: ReadonlyArray<readonly [string, string]>;
}

/** Allowed env_config keys of sokoban. */
export const SOKOBAN_KEYS = [
  'dim_x',
  'dim_y',
  'dim_room',
  'num_boxes',
  'max_steps',
  'search_depth',
  'format_penalty',
  'env_instruction',
  'action_pattern',
  'grid_lookup',
  'grid_vocab',
  'render_mode',
] as const;

/** A plain mapping, or throws naming the key. */
function getMap(where: string, raw: Record<string, unknown>, key: string, what: string): Record<string, unknown> | undefined {
  const v = raw[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw new EnvConfigError(key, `${where}: ${key} must be ${what}, got ${show(v)}`);
  return v as Record<string, unknown>;
}

/** [rows, cols] from dim_room and/or dim_x + dim_y. */
function parseDims(where: string, r: Record<string, unknown>): [number, number] {
  const side = (key: string, v: unknown): number => getInt(where, { [key]: v }, key, 0, 3, 64);
  let dims: [number, number] | undefined;
  if (r.dim_room !== undefined) {
    const v = r.dim_room;
    if (!Array.isArray(v) || v.length !== 2) {
      throw new EnvConfigError('dim_room', `${where}: dim_room must be [rows, cols], two integers in [3, 64], got ${show(v)}`);
    }
    dims = [side('dim_room[0]', v[0]), side('dim_room[1]', v[1])];
  }
  if (r.dim_x === undefined && r.dim_y === undefined) return dims ?? [6, 6];
  if (r.dim_x === undefined || r.dim_y === undefined) {
    throw new EnvConfigError(
      undefined,
      `${where}: give dim_x (rows) and dim_y (cols) together, got dim_x ${show(r.dim_x)} and dim_y ${show(r.dim_y)}`,
    );
  }
  const xy: [number, number] = [side('dim_x', r.dim_x), side('dim_y', r.dim_y)];
  if (dims !== undefined && (dims[0] !== xy[0] || dims[1] !== xy[1])) {
    throw new EnvConfigError(
      undefined,
      `${where}: dim_x/dim_y ${show(xy)} disagree with dim_room ${show(dims)}; give one form or equal values`,
    );
  }
  return xy;
}

/** grid_lookup: symbols by code 0..6. */
function parseLookup(where: string, r: Record<string, unknown>): readonly string[] {
  const what = 'a mapping of the codes 0..6 to one distinct character each (e.g. {0: "W", 1: ".", ..., 6: "@"})';
  const m = getMap(where, r, 'grid_lookup', what);
  if (m === undefined) return DEFAULT_GRID_LOOKUP;
  const codes = ['0', '1', '2', '3', '4', '5', '6'];
  const bad = Object.keys(m).find((k) => !codes.includes(k)) ?? codes.find((k) => !(k in m));
  if (bad !== undefined) {
    throw new EnvConfigError('grid_lookup', `${where}: grid_lookup must be ${what}; key ${bad} is ${bad in m ? 'not a code' : 'missing'}`);
  }
  const symbols = codes.map((k) => m[k]);
  symbols.forEach((s, i) => {
    if (typeof s !== 'string' || [...s].length !== 1 || s === '\n' || symbols.indexOf(s) !== i) {
      throw new EnvConfigError('grid_lookup', `${where}: grid_lookup must be ${what}; code ${i} has ${show(s)}`);
    }
  });
  return symbols as string[];
}

/** grid_vocab: [symbol, meaning] pairs in legend order, keyed by exactly the lookup's symbols. */
function parseVocab(where: string, r: Record<string, unknown>, lookup: readonly string[]): Array<[string, string]> {
  const what = `a mapping of each grid_lookup symbol (${lookup.join(' ')}) to its meaning`;
  const m = getMap(where, r, 'grid_vocab', what);
  if (m === undefined) return lookup.map((s, i) => [s, CELL_MEANINGS[i]]);
  const extra = Object.keys(m).find((k) => !lookup.includes(k));
  const missing = lookup.find((s) => !(s in m));
  if (extra !== undefined || missing !== undefined) {
    const problem = extra !== undefined ? `${show(extra)} is not a grid_lookup symbol` : `${show(missing)} is missing`;
    throw new EnvConfigError('grid_vocab', `${where}: grid_vocab must be ${what}; ${problem}`);
  }
  return Object.entries(m).map(([s, meaning]) => {
    if (typeof meaning !== 'string' || meaning.length === 0) {
      throw new EnvConfigError('grid_vocab', `${where}: grid_vocab must be ${what}; ${show(s)} has ${show(meaning)}`);
    }
    return [s, meaning];
  });
}

/** Validates a raw env_config. Throws EnvConfigError naming the key, the value and what is allowed. */
export function parseSokobanConfig(raw: RawEnvConfig): SokobanConfig {
  const where = 'env_config of sokoban';
  const r = checkKeys(where, raw, SOKOBAN_KEYS);
  checkRegex(where, r, 'action_pattern');
  checkTextRenderMode(where, r);
  const dim_room = parseDims(where, r);
  const maxBoxes = (dim_room[0] - 2) * (dim_room[1] - 2) - 2;
  if (maxBoxes < 1) {
    throw new EnvConfigError(
      'dim_room',
      `${where}: dim_room ${show(dim_room)} has ${maxBoxes + 2} interior cells; a room needs at least 3 (player, box, one more)`,
    );
  }
  const grid_lookup = parseLookup(where, r);
  return {
    dim_room,
    num_boxes: getInt(where, r, 'num_boxes', 1, 1, maxBoxes),
    max_steps: getInt(where, r, 'max_steps', 100, 1, 1_000_000),
    search_depth: getInt(where, r, 'search_depth', 300, 2, 1000),
    format_penalty: getNumber(where, r, 'format_penalty', 0),
    env_instruction: getInstruction(where, r),
    grid_lookup,
    grid_vocab: parseVocab(where, r, grid_lookup),
  };
}

/** Default instruction: compact (the quickstart model uses a char tokenizer); ROLL's is in traj_envs.yaml. */
export const SOKOBAN_INSTRUCTION =
  'Sokoban. Push every box onto a target; boxes cannot be pulled. Answer <answer>Up|Down|Left|Right</answer>.';

/**
 * The instruction shown at reset: the env_instruction, then the symbol legend and the actions in
 * ROLL's get_instructions format ("\nThe meaning of each symbol in the state is:\n#: wall, ..."
 * "\nYour available actions are:\nUp, Down, Left, Right").
 */
export function sokobanInstruction(config: SokobanConfig): string {
  const legend = config.grid_vocab.map(([s, meaning]) => `${s}: ${meaning}`).join(', ');
  return (
    `${config.env_instruction ?? SOKOBAN_INSTRUCTION}\nThe meaning of each symbol in the state is:\n${legend}` +
    `\nYour available actions are:\n${SOKOBAN_ACTIONS.join(', ')}`
  );
}

/** Renders a state: rows joined by "\n", one `lookup` symbol per cell (codes as DEFAULT_GRID_LOOKUP). */
export function renderSokoban(state: SokobanState, lookup: readonly string[] = DEFAULT_GRID_LOOKUP): string {
  const rows: string[] = [];
  for (let r = 0; r < state.rows; r++) {
    let line = '';
    for (let i = r * state.cols; i < (r + 1) * state.cols; i++) {
      const target = state.fixed[i] === TARGET ? 1 : 0;
      if (state.fixed[i] === WALL) line += lookup[0];
      else if (state.boxes[i] === 1) line += lookup[4 - target];
      else if (i === state.player) line += lookup[5 + target];
      else line += lookup[1 + target];
    }
    rows.push(line);
  }
  return rows.join('\n');
}

/** Per-step reward parts (gym-sokoban SokobanEnv defaults; docs/envs.md). */
const STEP_PENALTY = -0.1;
const BOX_ON_TARGET = 1;
const BOX_OFF_TARGET = -1;
const ALL_PLACED = 10;

/**
 * Sokoban env. Room: roomForSeed(dim_room, num_boxes, search_depth; seed), no other randomness.
 * Step (gym-sokoban SokobanEnv.step): reward -0.1, +1 when a push puts a box on a target, -1 when
 * one leaves a target, +10 more when all boxes are placed. An invalid answer is gym-sokoban's no-op
 * action: it costs the step and -0.1, plus format_penalty. action_is_effective = the player moved
 * (every state change moves the player). success = all boxes on targets. Terminated when solved or
 * when max_steps steps were taken (then info.truncated = true if not solved).
 */
export class SokobanEnv implements Env {
  readonly envType = 'sokoban';
  readonly actionNames: readonly string[] = SOKOBAN_ACTIONS;
  readonly config: SokobanConfig;
  private readonly options: EnvOptions;
  private readonly instruction: string;
  private state: SokobanState | null = null;
  private onTargets = 0;
  private done = false;
  private steps = 0;

  /** @param config raw env_config (validated here; throws Error on a bad key/value) */
  constructor(config: RawEnvConfig = {}, options: EnvOptions = {}) {
    this.config = parseSokobanConfig(config);
    this.options = options;
    this.instruction = sokobanInstruction(this.config);
  }

  /** A copy of the current room and its movable parts (null before the first reset). */
  get sokobanState(): SokobanState | null {
    return this.state === null ? null : { ...this.state, fixed: this.state.fixed.slice(), boxes: this.state.boxes.slice() };
  }

  reset(seed: number): { observation: string; info: { env_instruction: string } } {
    checkSeed(this.envType, seed);
    const [rows, cols] = this.config.dim_room;
    this.state = roomForSeed({ rows, cols, numBoxes: this.config.num_boxes, searchDepth: this.config.search_depth }, seed);
    this.onTargets = 0; // reverse play leaves every target uncovered
    this.done = false;
    this.steps = 0;
    return { observation: this.render(), info: { env_instruction: this.instruction } };
  }

  step(responseText: string): StepResult {
    const s = this.state;
    if (s === null) throw new Error('sokoban.step: call reset(seed) first');
    if (this.done) throw new Error('sokoban.step: the episode has terminated; call reset(seed)');
    this.steps++;
    const { action } = parseAction(responseText, this.actionNames, { enableThink: this.options.enableThink });
    let reward = STEP_PENALTY;
    let moved = false;
    if (action === null) {
      reward += this.config.format_penalty;
    } else {
      const out = tryMove(s.fixed, s.boxes, s.player, cellDeltas(s.cols)[this.actionNames.indexOf(action)]);
      if (out !== null) {
        moved = true;
        if (out.pushTo !== -1) {
          const change = (s.fixed[out.pushTo] === TARGET ? 1 : 0) - (s.fixed[out.player] === TARGET ? 1 : 0);
          s.boxes[out.player] = 0;
          s.boxes[out.pushTo] = 1;
          this.onTargets += change;
          if (change > 0) reward += BOX_ON_TARGET;
          if (change < 0) reward += BOX_OFF_TARGET;
        }
        s.player = out.player;
      }
    }
    const success = this.onTargets === this.config.num_boxes;
    if (success) reward += ALL_PLACED;
    const result: StepResult = {
      observation: this.render(),
      reward,
      terminated: success || this.steps >= this.config.max_steps,
      info: {
        success,
        action_is_valid: action !== null,
        action_is_effective: moved,
        format_penalty: action === null ? this.config.format_penalty : 0,
      },
    };
    if (result.terminated && !success) result.info.truncated = true;
    this.done = result.terminated;
    return result;
  }

  render(): string {
    if (this.state === null) throw new Error('sokoban.render: call reset(seed) first');
    return renderSokoban(this.state, this.config.grid_lookup);
  }

  /** Shortest action sequence from the current state (solveSokoban); [] when solved, null if none. */
  solve(): string[] | null {
    if (this.state === null) throw new Error('sokoban.solve: call reset(seed) first');
    return solveSokoban(this.state);
  }
}
