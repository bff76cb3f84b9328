/**
 * Breadth-first Sokoban solver over (player cell, box cells) states (SPEC.md §8 says
 * generated rooms are solvable by construction and tests check it with a BFS solver). Every action
 * (a move or a push) costs one step, so the result is a shortest action sequence, the one that earns
 * the most reward (11 - 0.1k for one box). Transitions are tryMove, the env's own rules.
 */
import { SOKOBAN_ACTIONS, TARGET, cellDeltas, tryMove, type SokobanAction, type SokobanState } from './sokoban_room';

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
  state.boxes.forEach((v, i) => { if (v === 1) start.push(i); });
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
      const nextBoxes = out.pushTo === -1 ? boxes
        : boxes.map((b) => (b === out.player ? out.pushTo : b)).sort((x, y) => x - y);
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
