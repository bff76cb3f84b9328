/**
 * FrozenLake text env (docs/envs.md; ROLL roll/pipeline/agentic/env/frozen_lake/env.py, RAGEN
 * ragen/env/frozen_lake). Seeded random map per reset, gymnasium slippery dynamics, text render,
 * and a BFS solver for tests and solver demonstrations.
 */
import { Rng } from '../util/rng';
import {
  checkKeys,
  checkRegex,
  checkTextRenderMode,
  getBool,
  getInstruction,
  getInt,
  getNumber,
  getNumbers,
  getString,
  type RawEnvConfig,
} from './config';
import { checkSeed, type Env, type EnvOptions, invalidAnswer, parseAction, type StepResult } from './env';
import { LAKE_OBSERVATION_FORMATS, type LakeObservationFormat, renderLakeCoords, renderLakeGridCoords } from './frozen_lake_coords';

/**
 * Validated FrozenLake env_config. Defaults: size 4, p 0.8 (probability a cell is FROZEN),
 * is_slippery true (gymnasium/ROLL default; our configs set it explicitly), success_rate 1/3,
 * format_penalty 0 (configs set it, e.g. -0.01), reward_schedule [1, 0, 0] (gymnasium's: the reward for a
 * move that ends on the goal, in a hole, on frozen ice), observation_format "grid" (RAGEN's key: "grid",
 * "coord" or "grid_coord", see frozen_lake_coords.ts; or starpo's "grid_neighbors", renderLakeNeighbors), env_instruction: the compact default when
 * absent or null ("" = no instruction),
 * max_steps null (no env-side cap; the rollout manager applies custom_envs.<tag>.max_steps).
 * Also accepted, as in ROLL's env_config (roll/pipeline/agentic/env/frozen_lake/env.py), but not kept:
 * `action_pattern` (checked to be a regular expression; answers are always parsed with the
 * docs/numerics.md §4.4 patterns, the think pattern when the rollout manager enables it), `render_mode` (only "text"),
 * `map_seed` (ROLL regenerates the map from the reset seed, so it has no effect there either).
 */
export interface FrozenLakeConfig {
  size: number;
  p: number;
  is_slippery: boolean;
  success_rate: number;
  format_penalty: number;
  reward_schedule: [goal: number, hole: number, frozen: number];
  observation_format: LakeObservationFormat;
  env_instruction: string | null;
  max_steps: number | null;
}

/** Allowed env_config keys of frozen_lake. */
export const FROZEN_LAKE_KEYS = [
  'size',
  'p',
  'is_slippery',
  'success_rate',
  'format_penalty',
  'reward_schedule',
  'observation_format',
  'env_instruction',
  'max_steps',
  'action_pattern',
  'render_mode',
  'map_seed',
] as const;

/** Validates a raw env_config. Throws EnvConfigError naming the key, the value and what is allowed. */
export function parseFrozenLakeConfig(raw: RawEnvConfig): FrozenLakeConfig {
  const where = 'env_config of frozen_lake';
  const r = checkKeys(where, raw, FROZEN_LAKE_KEYS);
  checkRegex(where, r, 'action_pattern');
  checkTextRenderMode(where, r);
  if (r.map_seed !== null) getInt(where, r, 'map_seed', 0, 0, Number.MAX_SAFE_INTEGER);
  const maxSteps = r.max_steps === null ? null : getInt(where, r, 'max_steps', -1, 1, 1_000_000);
  return {
    size: getInt(where, r, 'size', 4, 2, 64),
    p: getNumber(where, r, 'p', 0.8, 0, 1, true),
    is_slippery: getBool(where, r, 'is_slippery', true),
    success_rate: getNumber(where, r, 'success_rate', 1 / 3, 0, 1),
    format_penalty: getNumber(where, r, 'format_penalty', 0),
    reward_schedule: getNumbers(where, r, 'reward_schedule', [1, 0, 0]) as FrozenLakeConfig['reward_schedule'],
    observation_format: getString(
      where,
      r,
      'observation_format',
      'grid',
      new RegExp(`^(${LAKE_OBSERVATION_FORMATS.join('|')})$`),
      `one of ${LAKE_OBSERVATION_FORMATS.map((f) => `"${f}"`).join(', ')}`,
    ) as LakeObservationFormat,
    env_instruction: getInstruction(where, r),
    max_steps: maxSteps === -1 ? null : maxSteps,
  };
}

/** Default instruction: short on purpose (the quickstart model uses a char tokenizer). */
export function frozenLakeInstruction(slippery: boolean): string {
  return `FrozenLake. Reach G, avoid O. P is you.${slippery ? ' Ice is slippery.' : ''} Answer <answer>Left|Down|Right|Up</answer>.`;
}

// Map generation and BFS: pure functions, no env state (ROLL roll/pipeline/agentic/env/frozen_lake/utils.py
// generate_random_map, gymnasium toy_text/frozen_lake.py).

/** A grid cell position, 0-based (row 0 at the top). */
export interface Pos {
  row: number;
  col: number;
}

/**
 * A FrozenLake map. `desc`: `size` rows of `size` chars in gymnasium's vocabulary:
 * 'S' start (frozen), 'F' frozen, 'H' hole, 'G' goal. `start` / `goal` repeat the S and G positions.
 */
export interface LakeMap {
  size: number;
  desc: string[];
  start: Pos;
  goal: Pos;
}

/** Action names in gymnasium id order 0..3 (docs/envs.md). */
export const LAKE_ACTIONS = ['Left', 'Down', 'Right', 'Up'] as const;
/** One of LAKE_ACTIONS. */
export type LakeAction = (typeof LAKE_ACTIONS)[number];

const DELTAS: ReadonlyArray<readonly [number, number]> = [
  [0, -1],
  [1, 0],
  [0, 1],
  [-1, 0],
];

/**
 * The cell reached by moving from `pos` with action id `a` (0 Left, 1 Down, 2 Right, 3 Up);
 * moves off the grid leave the player in place (gymnasium semantics).
 */
export function moveFrom(pos: Pos, a: number, size: number): Pos {
  const [dr, dc] = DELTAS[a];
  const row = Math.min(size - 1, Math.max(0, pos.row + dr));
  const col = Math.min(size - 1, Math.max(0, pos.col + dc));
  return { row, col };
}

/**
 * Breadth-first shortest path from `start` to `goal` through non-hole cells ('H' is blocked; the
 * goal may be any cell). Neighbours are tried in action order Left, Down, Right, Up, so the result is
 * deterministic.
 * @param desc map rows (chars S/F/H/G)
 * @returns the action names of a shortest path ([] when start equals goal), or null if unreachable.
 */
export function shortestPath(desc: readonly string[], start: Pos, goal: Pos): LakeAction[] | null {
  const size = desc.length;
  const key = (p: Pos): number => p.row * size + p.col;
  const prev = new Map<number, { from: number; action: number }>();
  const seen = new Set<number>([key(start)]);
  const queue: Pos[] = [start];
  for (let head = 0; head < queue.length; head++) {
    const cur = queue[head];
    if (cur.row === goal.row && cur.col === goal.col) {
      const actions: LakeAction[] = [];
      let k = key(cur);
      while (k !== key(start)) {
        const step = prev.get(k)!;
        actions.push(LAKE_ACTIONS[step.action]);
        k = step.from;
      }
      return actions.reverse();
    }
    for (let a = 0; a < 4; a++) {
      const next = moveFrom(cur, a, size);
      const nk = key(next);
      if (seen.has(nk) || desc[next.row][next.col] === 'H') continue;
      seen.add(nk);
      prev.set(nk, { from: key(cur), action: a });
      queue.push(next);
    }
  }
  return null;
}

/** Maximum regeneration attempts before `generateMap` gives up (only reachable with tiny p). */
export const MAX_MAP_TRIES = 100_000;

/**
 * Generates a solvable map: each cell is frozen with probability `p` (else a hole); start and goal
 * are distinct uniformly random cells (both forced frozen / goal); regenerate until a path exists
 * (docs/envs.md, ROLL generate_random_map). Draw order per attempt: size*size cell draws (row-major),
 * start row, start col, then goal row/col until distinct from the start.
 * @param size grid side, integer >= 2
 * @param p probability a cell is frozen, in (0, 1]
 * @param rng the stream to draw from (advanced in place)
 * @throws RangeError for a bad size or p; Error after MAX_MAP_TRIES unsolvable attempts.
 */
export function generateMap(size: number, p: number, rng: Rng): LakeMap {
  if (!Number.isInteger(size) || size < 2) throw new RangeError(`generateMap: size must be an integer >= 2, got ${size}`);
  if (!(p > 0 && p <= 1)) throw new RangeError(`generateMap: p must be in (0, 1], got ${p}`);
  for (let attempt = 0; attempt < MAX_MAP_TRIES; attempt++) {
    const grid: string[][] = [];
    for (let r = 0; r < size; r++) {
      const row: string[] = [];
      for (let c = 0; c < size; c++) row.push(rng.next() < p ? 'F' : 'H');
      grid.push(row);
    }
    const start: Pos = { row: rng.int(size), col: rng.int(size) };
    let goal: Pos;
    do goal = { row: rng.int(size), col: rng.int(size) };
    while (goal.row === start.row && goal.col === start.col);
    grid[start.row][start.col] = 'S';
    grid[goal.row][goal.col] = 'G';
    const desc = grid.map((row) => row.join(''));
    if (shortestPath(desc, start, goal) !== null) return { size, desc, start, goal };
  }
  throw new Error(`generateMap: no solvable ${size}x${size} map with p=${p} after ${MAX_MAP_TRIES} attempts; raise p`);
}

/** The symbols renderLake draws, [symbol, meaning] (docs/envs.md, ROLL grid_lookup); shown as a legend by `starpo report`. */
export const LAKE_SYMBOLS: ReadonlyArray<readonly [string, string]> = [
  ['P', 'player'],
  ['_', 'frozen'],
  ['O', 'hole'],
  ['G', 'goal'],
  ['X', 'player in a hole'],
  ['√', 'player on the goal'],
];

/** The LAKE_SYMBOLS symbol of a map cell (gymnasium char), with or without the player on it. */
function cellSymbol(cell: string, here: boolean): string {
  if (cell === 'H') return here ? 'X' : 'O';
  if (cell === 'G') return here ? '√' : 'G';
  return here ? 'P' : '_';
}

/** Renders a map with the player: rows joined by "\n", one LAKE_SYMBOLS symbol per cell. */
export function renderLake(map: LakeMap, player: Pos): string {
  const rows: string[] = [];
  for (let r = 0; r < map.size; r++) {
    let line = '';
    for (let c = 0; c < map.size; c++) line += cellSymbol(map.desc[r][c], r === player.row && c === player.col);
    rows.push(line);
  }
  return rows.join('\n');
}

/**
 * starpo's `grid_neighbors` observation: renderLake, then one line naming the cell on each side of the player
 * in action order, `#` beyond the edge ("Left:_ Down:O Right:_ Up:#"). A small decoder with rotary positions
 * reads the goal's direction off the grid well but hardly whether the next cell is a hole; the line spells
 * that out, and the game is unchanged.
 */
export function renderLakeNeighbors(map: LakeMap, player: Pos): string {
  const sides = LAKE_ACTIONS.map((name, a) => {
    const next = moveFrom(player, a, map.size);
    const beyond = next.row === player.row && next.col === player.col;
    return `${name}:${beyond ? '#' : cellSymbol(map.desc[next.row][next.col], false)}`;
  });
  return `${renderLake(map, player)}\n${sides.join(' ')}`;
}

/**
 * FrozenLake env. Map: generateMap(size, p, Rng('frozen_lake/map', seed)). Slippery: the intended
 * move with probability success_rate, each perpendicular move with (1 - success_rate)/2 (gymnasium
 * order [a-1, a, a+1] mod 4, one Rng.next() per valid step), drawn from Rng('frozen_lake/slip', seed,
 * envId) (or Rng('frozen_lake/slip', seed) without envId; see EnvOptions). A valid move earns
 * reward_schedule's entry for the cell it ends on (G, H, else frozen; 1 / 0 / 0 by default, as in gymnasium);
 * terminated on G or H. Invalid answer: state unchanged, reward format_penalty, no draw.
 * action_is_effective = the player's cell changed (a move into the border is valid but not effective).
 * With max_steps set, the step that reaches it ends the episode (terminated true, info.truncated true);
 * ROLL's env only flags truncation there and leaves the cap to the rollout manager, which our configs
 * set to the same number.
 */
export class FrozenLakeEnv implements Env {
  readonly envType = 'frozen_lake';
  readonly actionNames: readonly string[] = LAKE_ACTIONS;
  readonly config: FrozenLakeConfig;
  private readonly options: EnvOptions;
  private map: LakeMap | null = null;
  private player: Pos = { row: 0, col: 0 };
  private slip: Rng | null = null;
  private done = false;
  private steps = 0;

  /** @param config raw env_config (validated here; throws Error on a bad key/value) */
  constructor(config: RawEnvConfig = {}, options: EnvOptions = {}) {
    this.config = parseFrozenLakeConfig(config);
    this.options = options;
  }

  /** The current map (null before the first reset). */
  get lakeMap(): LakeMap | null {
    return this.map;
  }

  /** The player's current cell. */
  get position(): Pos {
    return { ...this.player };
  }

  reset(seed: number): { observation: string; info: { env_instruction: string } } {
    checkSeed(this.envType, seed);
    this.map = generateMap(this.config.size, this.config.p, new Rng('frozen_lake/map', seed));
    this.player = { ...this.map.start };
    this.slip =
      this.options.envId === undefined ? new Rng('frozen_lake/slip', seed) : new Rng('frozen_lake/slip', seed, this.options.envId);
    this.done = false;
    this.steps = 0;
    const env_instruction = this.config.env_instruction ?? frozenLakeInstruction(this.config.is_slippery);
    return { observation: this.render(), info: { env_instruction } };
  }

  step(responseText: string): StepResult {
    if (this.map === null || this.slip === null) throw new Error('frozen_lake.step: call reset(seed) first');
    if (this.done) throw new Error('frozen_lake.step: the episode has terminated; call reset(seed)');
    this.steps++;
    const { action } = parseAction(responseText, this.actionNames, { enableThink: this.options.enableThink });
    let result: StepResult;
    if (action === null) {
      result = invalidAnswer(this.render(), this.config.format_penalty, false);
    } else {
      let a = LAKE_ACTIONS.indexOf(action as (typeof LAKE_ACTIONS)[number]);
      if (this.config.is_slippery) {
        const side = (1 - this.config.success_rate) / 2;
        const u = this.slip.next();
        a = u < side ? (a + 3) % 4 : u < side + this.config.success_rate ? a : (a + 1) % 4;
      }
      const next = moveFrom(this.player, a, this.map.size);
      const moved = next.row !== this.player.row || next.col !== this.player.col;
      this.player = next;
      const cell = this.map.desc[next.row][next.col];
      const success = cell === 'G';
      result = {
        observation: this.render(),
        reward: this.config.reward_schedule[success ? 0 : cell === 'H' ? 1 : 2],
        terminated: success || cell === 'H',
        info: { success, action_is_valid: true, action_is_effective: moved, format_penalty: 0 },
      };
    }
    if (!result.terminated && this.config.max_steps !== null && this.steps >= this.config.max_steps) {
      result.terminated = true;
      result.info.truncated = true;
    }
    this.done = result.terminated;
    return result;
  }

  render(): string {
    if (this.map === null) throw new Error('frozen_lake.render: call reset(seed) first');
    const format = this.config.observation_format;
    if (format === 'grid') return renderLake(this.map, this.player);
    if (format === 'grid_neighbors') return renderLakeNeighbors(this.map, this.player);
    const coords = renderLakeCoords(this.map, this.player);
    return format === 'coord' ? coords : renderLakeGridCoords(coords, renderLake(this.map, this.player));
  }

  /**
   * A shortest action sequence from the player's cell to the goal (BFS, shortestPath; [] on the goal),
   * or null when the moves are random (is_slippery with success_rate < 1), the player is in a hole, or
   * the goal is unreachable. Ignores max_steps. Throws Error before the first reset.
   */
  solve(): string[] | null {
    if (this.map === null) throw new Error('frozen_lake.solve: call reset(seed) first');
    const random = this.config.is_slippery && this.config.success_rate < 1;
    if (random || this.map.desc[this.player.row][this.player.col] === 'H') return null;
    return shortestPath(this.map.desc, this.player, this.map.goal);
  }
}
