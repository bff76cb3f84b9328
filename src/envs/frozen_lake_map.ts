/**
 * FrozenLake map generation and BFS (SPEC.md §8; ROLL roll/pipeline/agentic/env/frozen_lake/utils.py
 * generate_random_map, gymnasium toy_text/frozen_lake.py). Pure functions, no env state.
 */
import { Rng } from '../util/rng';

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

/** Action names in gymnasium id order 0..3 (SPEC.md §8). */
export const LAKE_ACTIONS = ['Left', 'Down', 'Right', 'Up'] as const;
/** One of LAKE_ACTIONS. */
export type LakeAction = (typeof LAKE_ACTIONS)[number];

const DELTAS: ReadonlyArray<readonly [number, number]> = [[0, -1], [1, 0], [0, 1], [-1, 0]];

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
 * (SPEC.md §8, ROLL generate_random_map). Draw order per attempt: size*size cell draws (row-major),
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
