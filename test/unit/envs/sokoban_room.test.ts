import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderSokoban } from '../../../src/envs/sokoban';
import {
  cellDeltas,
  FLOOR,
  generateRoom,
  MAX_ROOM_RETRIES,
  type RoomSpec,
  roomForSeed,
  roomTopology,
  type SokobanState,
  solveSokoban,
  TARGET,
  tryMove,
  WALL,
} from '../../../src/envs/sokoban_room';
import { Rng } from '../../../src/util/rng';

const SIMPLE: RoomSpec = { rows: 6, cols: 6, numBoxes: 1, searchDepth: 300 };
const LARGER: RoomSpec = { rows: 10, cols: 10, numBoxes: 2, searchDepth: 10 };

/** A state from rows of '#', '_', 'O', 'X' (box), '√' (box on target), 'P', 'S'. */
function parseRoom(rows: string[]): SokobanState {
  const cols = rows[0].length;
  const cells = rows.join('');
  const fixed = Uint8Array.from([...cells], (ch) => (ch === '#' ? WALL : 'O√S'.includes(ch) ? TARGET : FLOOR));
  const boxes = Uint8Array.from([...cells], (ch) => ('X√'.includes(ch) ? 1 : 0));
  return { rows: rows.length, cols, fixed, boxes, player: [...cells].findIndex((ch) => 'PS'.includes(ch)) };
}

/** Checks the invariants of a generated room; returns its shortest solution length. */
function checkRoom(room: SokobanState, spec: RoomSpec, label: string): number {
  const { rows, cols, fixed, boxes, player } = room;
  for (let i = 0; i < rows * cols; i++) {
    const r = Math.floor(i / cols);
    const c = i % cols;
    if (r === 0 || c === 0 || r === rows - 1 || c === cols - 1) assert.equal(fixed[i], WALL, `${label}: border cell ${i}`);
    if (boxes[i] === 1) assert.equal(fixed[i], FLOOR, `${label}: box on a target or wall at ${i}`);
  }
  assert.equal(fixed.filter((v) => v === TARGET).length, spec.numBoxes, label);
  assert.equal(boxes.filter((v) => v === 1).length, spec.numBoxes, label);
  assert.ok(fixed[player] !== WALL && boxes[player] === 0, `${label}: player on a wall or box`);
  const path = solveSokoban(room);
  assert.ok(path !== null && path.length > 0, `${label} unsolvable:\n${renderSokoban(room)}`);
  return path.length;
}

test('1,000 SimpleSokoban rooms (seeds 0..999) are valid and all solvable by BFS', () => {
  let total = 0;
  for (let seed = 0; seed < 1000; seed++) total += checkRoom(roomForSeed(SIMPLE, seed), SIMPLE, `seed ${seed}`);
  assert.ok(total / 1000 > 3, `mean solution length ${total / 1000}`);
});

test('100 LargerSokoban rooms (10x10, 2 boxes, search_depth 10) are valid and solvable', () => {
  for (let seed = 0; seed < 100; seed++) checkRoom(roomForSeed(LARGER, seed), LARGER, `seed ${seed}`);
});

test('roomTopology: walled border, floor inside, deterministic for a stream', () => {
  const a = roomTopology(7, 9, Math.floor(1.7 * 16), new Rng('t', 1));
  assert.deepEqual(a, roomTopology(7, 9, 27, new Rng('t', 1)));
  assert.ok(a.some((v) => v === FLOOR));
  for (let i = 0; i < 63; i++) if (i < 9 || i >= 54 || i % 9 === 0 || i % 9 === 8) assert.equal(a[i], WALL);
});

test('a failed generation retries with a derived seed (ROLL re-seeds); impossible specs throw', () => {
  const tiny: RoomSpec = { rows: 3, cols: 5, numBoxes: 1, searchDepth: 30 };
  assert.equal(generateRoom(tiny, new Rng('sokoban/room', 0)), null);
  const retried = generateRoom(tiny, new Rng('sokoban/room', 0, 'retry', 1));
  assert.deepEqual(roomForSeed(tiny, 0), retried);
  assert.equal(renderSokoban(retried!), '#####\n#PXO#\n#####');
  assert.throws(
    () => roomForSeed({ rows: 4, cols: 4, numBoxes: 3, searchDepth: 10 }, 5),
    new RegExp(`no 4x4 room with 3 boxes after ${MAX_ROOM_RETRIES} retries for seed 5; use fewer boxes or a larger room`),
  );
});

test('tryMove: move, push, blocked by a wall, box against a wall, box against a box', () => {
  const s = parseRoom(['#######', '#P_XXO#', '#_X___#', '#######']);
  const [up, down, left, right] = cellDeltas(s.cols);
  assert.deepEqual(tryMove(s.fixed, s.boxes, 8, right), { player: 9, pushTo: -1 });
  assert.deepEqual(tryMove(s.fixed, s.boxes, 17, left), { player: 16, pushTo: 15 });
  assert.equal(tryMove(s.fixed, s.boxes, 8, up), null);
  assert.equal(tryMove(s.fixed, s.boxes, 9, down), null); // box 16 against the bottom wall
  assert.equal(tryMove(s.fixed, s.boxes, 9, right), null); // box 10 against box 11
  assert.equal(tryMove(s.fixed, s.boxes, 12, left), null); // box 11 against box 10
});

test('solveSokoban: shortest path, already solved, unsolvable (cornered box), state cap', () => {
  const line = parseRoom(['#######', '#P_X_O#', '#######']);
  assert.deepEqual(solveSokoban(line), ['Right', 'Right', 'Right']);
  assert.equal(solveSokoban(line, 1), null);
  assert.deepEqual(solveSokoban(parseRoom(['#####', '#P√_#', '#####'])), []);
  assert.equal(solveSokoban(parseRoom(['#####', '#X_O#', '#P__#', '#####'])), null);
  // Two boxes (traced by hand: each push lands as intended, both boxes end on targets in 10 steps).
  const two = parseRoom(['######', '#O___#', '#_X__#', '#__XP#', '#___O#', '######']);
  assert.deepEqual(solveSokoban(two), ['Left', 'Up', 'Left', 'Down', 'Left', 'Up', 'Down', 'Down', 'Right', 'Right']);
});
