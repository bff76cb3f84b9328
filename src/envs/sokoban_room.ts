/**
 * Sokoban room model, generation and BFS solver (docs/envs.md). Generation is gym-sokoban's method
 * (github.com/mpSchrader/gym-sokoban, envs/room_utils.py) as ROLL uses it
 * (roll/pipeline/agentic/env/sokoban/utils.py generate_room, with its random player nudge):
 * random-walk topology, player and targets on random floor cells, then reverse play from the solved
 * state. Every draw comes from the caller's seeded Rng, so a room is a pure function of the seed.
 */
import { Rng } from '../util/rng';

/** Fixed cell kinds of a room (gym-sokoban room_fixed codes). */
export const WALL = 0;
/** A floor cell without a target. */
export const FLOOR = 1;
/** A box target (floor). */
export const TARGET = 2;

/** Action names in gym-sokoban order (push/move up, down, left, right; docs/envs.md, ROLL ACTION_LOOKUP 1..4). */
export const SOKOBAN_ACTIONS = ['Up', 'Down', 'Left', 'Right'] as const;
/** One of SOKOBAN_ACTIONS. */
export type SokobanAction = (typeof SOKOBAN_ACTIONS)[number];

/**
 * A room and its movable parts. Cells are row-major indices r * cols + c (row 0 at the top).
 * `fixed`: WALL | FLOOR | TARGET per cell; the border is always wall, so index arithmetic with
 * cellDeltas never leaves the grid from a floor cell. `boxes`: 1 where a box stands, else 0
 * (as many boxes as targets). `player`: the player's cell.
 */
export interface SokobanState {
  rows: number;
  cols: number;
  fixed: Uint8Array;
  boxes: Uint8Array;
  player: number;
}

/** Index offsets of Up, Down, Left, Right in a grid with `cols` columns. */
export function cellDeltas(cols: number): [number, number, number, number] {
  return [-cols, cols, -1, 1];
}

/** Outcome of a move: the player's new cell; `pushTo` is the pushed box's new cell (-1: no push). */
export interface MoveOutcome {
  player: number;
  pushTo: number;
}

/**
 * Forward Sokoban move (gym-sokoban SokobanEnv._push/_move): step onto floor or target; a box in
 * the way is pushed when the cell beyond it is floor or target without a box; otherwise blocked.
 * @param delta one of cellDeltas(cols)
 * @returns the outcome, or null when the move is blocked (state unchanged).
 */
export function tryMove(fixed: Uint8Array, boxes: Uint8Array, player: number, delta: number): MoveOutcome | null {
  const next = player + delta;
  if (fixed[next] === WALL) return null;
  if (boxes[next] === 0) return { player: next, pushTo: -1 };
  const beyond = next + delta;
  if (fixed[beyond] === WALL || boxes[beyond] === 1) return null;
  return { player: next, pushTo: beyond };
}

/** The 3x3 floor masks stamped along the random walk (gym-sokoban room_topology_generation). */
const MASKS: ReadonlyArray<ReadonlyArray<readonly number[]>> = [
  [
    [0, 0, 0],
    [1, 1, 1],
    [0, 0, 0],
  ],
  [
    [0, 1, 0],
    [0, 1, 0],
    [0, 1, 0],
  ],
  [
    [0, 0, 0],
    [1, 1, 0],
    [0, 1, 0],
  ],
  [
    [0, 0, 0],
    [1, 1, 0],
    [1, 1, 0],
  ],
  [
    [0, 0, 0],
    [0, 1, 1],
    [0, 1, 0],
  ],
];
const WALK_DIRECTIONS: ReadonlyArray<readonly [number, number]> = [
  [1, 0],
  [0, 1],
  [-1, 0],
  [0, -1],
];

/**
 * Room topology (gym-sokoban room_topology_generation): a random walk of `steps` steps starting at
 * a cell drawn from rows 1..rows-1 and columns 1..cols-1 (Python randint bounds, inclusive), changing
 * direction with probability 0.35 (a fresh uniform pick among the 4 directions), clamped to the
 * interior, stamping a uniformly chosen 3x3 mask centred on each position; the border stays wall.
 * Draw order: initial direction, start row, start col, then per step: change draw, [direction],
 * mask. @returns row-major WALL/FLOOR cells.
 */
export function roomTopology(rows: number, cols: number, steps: number, rng: Rng): Uint8Array {
  const level = new Uint8Array(rows * cols);
  let dir = WALK_DIRECTIONS[rng.int(4)];
  let r = 1 + rng.int(rows - 1);
  let c = 1 + rng.int(cols - 1);
  for (let s = 0; s < steps; s++) {
    if (rng.next() < 0.35) dir = WALK_DIRECTIONS[rng.int(4)];
    r = Math.max(Math.min(r + dir[0], rows - 2), 1);
    c = Math.max(Math.min(c + dir[1], cols - 2), 1);
    const mask = MASKS[rng.int(MASKS.length)];
    for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) if (mask[i][j] === 1) level[(r - 1 + i) * cols + (c - 1 + j)] = FLOOR;
  }
  for (let i = 0; i < rows; i++) level[i * cols] = level[i * cols + cols - 1] = WALL;
  for (let j = 0; j < cols; j++) level[j] = level[(rows - 1) * cols + j] = WALL;
  return level;
}

/** Codes of the reverse-play grid (gym-sokoban room_state): a box pulled at least once is 3, else 4. */
const PULLED_BOX = 3;
const BOX = 4;
const PLAYER = 5;

/** Upper bound on explored states of one reverse play (gym-sokoban depth_first_search). */
export const REVERSE_PLAY_MAX_STATES = 300_000;

/** Result of reverse play: the best grid found and each box's position keyed by its target cell. */
interface ReversePlay {
  grid: Uint8Array;
  boxOf: Map<number, number>;
  score: number;
}

/** Sum over boxes of the Manhattan distance from each box to the target it started on. */
function displacement(boxOf: Map<number, number>, cols: number): number {
  let d = 0;
  for (const [target, box] of boxOf) {
    d += Math.abs(Math.floor(target / cols) - Math.floor(box / cols)) + Math.abs((target % cols) - (box % cols));
  }
  return d;
}

/**
 * Reverse play (gym-sokoban reverse_playing / depth_first_search / reverse_move): depth-first over the
 * player's moves Up, Down, Left, Right from the solved state, where a move onto floor or an empty
 * target pulls the box standing behind the player along. A node is expanded only if `ttl`
 * (search_depth, minus one per level, checked after decrementing) stays > 0, fewer than
 * REVERSE_PLAY_MAX_STATES grids were explored, and its grid is new (grids tell pulled and never-pulled
 * boxes apart, as gym-sokoban's do). Score = box swaps (times the pulled box changed) x displacement,
 * 0 while any target is covered (by a box or by the player); the first grid with the highest score wins.
 * (docs/envs.md calls the swap count "number of box moves"; gym-sokoban counts swaps, which we follow.)
 */
function reversePlay(fixed: Uint8Array, start: Uint8Array, cols: number, searchDepth: number): ReversePlay {
  const targets: number[] = [];
  fixed.forEach((v, i) => {
    if (v === TARGET) targets.push(i);
  });
  const deltas = cellDeltas(cols);
  const explored = new Set<string>();
  let best: ReversePlay = { grid: start, boxOf: new Map(targets.map((t) => [t, t])), score: -1 };

  const dfs = (grid: Uint8Array, boxOf: Map<number, number>, swaps: number, lastPull: number, ttl: number): void => {
    ttl -= 1;
    if (ttl <= 0 || explored.size >= REVERSE_PLAY_MAX_STATES) return;
    const key = String.fromCharCode(...grid);
    if (explored.has(key)) return;
    let open = 0;
    for (const t of targets) if (grid[t] === TARGET) open++;
    const score = open === targets.length ? swaps * displacement(boxOf, cols) : 0;
    if (score > best.score) best = { grid, boxOf, score };
    explored.add(key);
    const player = grid.indexOf(PLAYER);
    for (const delta of deltas) {
      const next = player + delta;
      if (grid[next] !== FLOOR && grid[next] !== TARGET) continue; // blocked: gym-sokoban's call is a no-op
      const g = grid.slice();
      g[player] = fixed[player];
      g[next] = PLAYER;
      let nextBoxOf = boxOf;
      let pull = lastPull;
      const behind = player - delta;
      if (grid[behind] === PULLED_BOX || grid[behind] === BOX) {
        g[player] = PULLED_BOX;
        g[behind] = fixed[behind];
        nextBoxOf = new Map(boxOf);
        for (const [t, b] of boxOf)
          if (b === behind) {
            nextBoxOf.set(t, player);
            pull = t;
          }
      }
      dfs(g, nextBoxOf, pull !== lastPull ? swaps + 1 : swaps, pull, ttl);
    }
  };
  dfs(start, best.boxOf, 0, -1, searchDepth);
  return best;
}

/**
 * ROLL's add_random_player_movement (max 3 steps, continue probability 0.5): with probability
 * `moveProbability`, walk the player 1-3 steps onto free floor or targets, never back onto a visited
 * cell, each step a uniform pick among the allowed moves (Up, Down, Left, Right order).
 */
function nudgePlayer(fixed: Uint8Array, boxes: Uint8Array, player: number, cols: number, moveProbability: number, rng: Rng): number {
  if (rng.next() > moveProbability) return player;
  const visited = [player];
  for (let steps = 0; steps < 3; ) {
    const options = cellDeltas(cols)
      .map((d) => player + d)
      .filter((n) => fixed[n] !== WALL && boxes[n] === 0 && !visited.includes(n));
    if (options.length === 0) break;
    player = options[rng.int(options.length)];
    visited.push(player);
    steps++;
    if (steps >= 3 || rng.next() > 0.5) break;
  }
  return player;
}

/** Generation parameters. `numBoxes` >= 1, `searchDepth` >= 2 (reverse-play depth), dims >= 3. */
export interface RoomSpec {
  rows: number;
  cols: number;
  numBoxes: number;
  searchDepth: number;
}

/**
 * One generate_room call (ROLL utils.py): up to 4 tries of topology (int(1.7 * (rows + cols)) walk
 * steps), placement (player first, then each target, uniform over the free floor cells in row-major
 * order) and reverse play; accept the first try whose displacement is > 0. Then nudge the player
 * (probability 0.8 when the displacement is 1, else 0.5).
 * @returns the room, or null where gym-sokoban raises: too few floor cells (> numBoxes + 1 needed)
 *          or no try scored above 0.
 */
export function generateRoom(spec: RoomSpec, rng: Rng): SokobanState | null {
  const { rows, cols, numBoxes, searchDepth } = spec;
  for (let attempt = 0; attempt < 4; attempt++) {
    const fixed = roomTopology(rows, cols, Math.floor(1.7 * (rows + cols)), rng);
    const free: number[] = [];
    fixed.forEach((v, i) => {
      if (v === FLOOR) free.push(i);
    });
    if (free.length <= numBoxes + 1) return null;
    const player = free.splice(rng.int(free.length), 1)[0];
    for (let b = 0; b < numBoxes; b++) fixed[free.splice(rng.int(free.length), 1)[0]] = TARGET;
    const start = fixed.map((v) => (v === TARGET ? BOX : v));
    start[player] = PLAYER;
    const best = reversePlay(fixed, start, cols, searchDepth);
    const disp = displacement(best.boxOf, cols);
    if (disp === 0) continue;
    const boxes = best.grid.map((v) => (v === BOX || v === PULLED_BOX ? 1 : 0));
    const moved = nudgePlayer(fixed, boxes, best.grid.indexOf(PLAYER), cols, disp === 1 ? 0.8 : 0.5, rng);
    return { rows, cols, fixed, boxes, player: moved };
  }
  return null;
}

/** Derived-seed retries before roomForSeed gives up (only reachable with rooms too small for the boxes). */
export const MAX_ROOM_RETRIES = 1000;

/**
 * The room of a reset seed: generateRoom with Rng('sokoban/room', seed); when it fails (ROLL then
 * resets again with a seed hashed from the old one, with Python's per-process string hash), retry
 * k = 1, 2, ... with Rng('sokoban/room', seed, 'retry', k), so the room stays a pure function of the seed.
 * @throws Error after MAX_ROOM_RETRIES failed retries (the room is too small for the boxes).
 */
export function roomForSeed(spec: RoomSpec, seed: number): SokobanState {
  for (let k = 0; k <= MAX_ROOM_RETRIES; k++) {
    const rng = k === 0 ? new Rng('sokoban/room', seed) : new Rng('sokoban/room', seed, 'retry', k);
    const room = generateRoom(spec, rng);
    if (room !== null) return room;
  }
  throw new Error(
    `sokoban: no ${spec.rows}x${spec.cols} room with ${spec.numBoxes} boxes after ${MAX_ROOM_RETRIES} retries ` +
      `for seed ${seed}; use fewer boxes or a larger room`,
  );
}

// The solver: breadth-first search over (player cell, box cells) states with tryMove, the env's own
// rules. Every action (a move or a push) costs one step, so the result is a shortest action sequence,
// the one that earns the most reward (11 - 0.1k for one box); tests check generated rooms with it.

/** Default cap on distinct states visited by solveSokoban. */
export const SOLVER_MAX_STATES = 1_000_000;

/** A state key: the player cell then the sorted box cells, one UTF-16 unit each (rooms have < 65,536 cells). */
function stateKey(player: number, boxes: readonly number[]): string {
  return String.fromCharCode(player, ...boxes);
}

/**
 * Shortest action sequence from `state` to all boxes on targets. Neighbours are tried in the order
 * Up, Down, Left, Right, so the answer is deterministic.
 * @param maxStates give up (return null) after visiting this many distinct states
 * @returns action names ([] when already solved), or null when unsolvable or the cap was reached.
 */
export function solveSokoban(state: SokobanState, maxStates = SOLVER_MAX_STATES): SokobanAction[] | null {
  const { fixed } = state;
  const deltas = cellDeltas(state.cols);
  const start: number[] = [];
  state.boxes.forEach((v, i) => {
    if (v === 1) start.push(i);
  });
  const solved = (boxes: readonly number[]): boolean => boxes.every((b) => fixed[b] === TARGET);
  // Parallel arrays: node i has player players[i], boxes boxLists[i], reached from parents[i] by actions[i].
  const players = [state.player];
  const boxLists = [start];
  const parents = [-1];
  const actions = [-1];
  const seen = new Set([stateKey(state.player, start)]);
  const occupied = new Uint8Array(fixed.length);
  for (let head = 0; head < players.length; head++) {
    const boxes = boxLists[head];
    if (solved(boxes)) {
      const path: SokobanAction[] = [];
      for (let i = head; parents[i] !== -1; i = parents[i]) path.push(SOKOBAN_ACTIONS[actions[i]]);
      return path.reverse();
    }
    for (const b of boxes) occupied[b] = 1;
    for (let a = 0; a < 4; a++) {
      const out = tryMove(fixed, occupied, players[head], deltas[a]);
      if (out === null) continue;
      const nextBoxes = out.pushTo === -1 ? boxes : boxes.map((b) => (b === out.player ? out.pushTo : b)).sort((x, y) => x - y);
      const key = stateKey(out.player, nextBoxes);
      if (seen.has(key)) continue;
      if (seen.size >= maxStates) return null;
      seen.add(key);
      players.push(out.player);
      boxLists.push(nextBoxes);
      parents.push(head);
      actions.push(a);
    }
    for (const b of boxes) occupied[b] = 0;
  }
  return null;
}
