import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FrozenLakeEnv, renderLakeNeighbors } from '../../../src/envs/frozen_lake';

const ans = (a: string): string => `<answer>${a}</answer><|im_end|>`;

// Map of seed 0 (test/unit/envs/frozen_lake.test.ts): '___G\n_O__\n_PO_\nOO__', start (2, 1), goal (0, 3).
const GRID = '___G\n_O__\n_PO_\nOO__';

test('observation_format grid_neighbors: the grid, then the cell on each side of the player in action order', () => {
  const env = new FrozenLakeEnv({ is_slippery: false, observation_format: 'grid_neighbors' });
  assert.equal(env.reset(0).observation, `${GRID}\nLeft:_ Down:O Right:O Up:O`);
  // Left to the edge column: nothing beyond it.
  assert.equal(env.step(ans('Left')).observation, '___G\n_O__\nP_O_\nOO__\nLeft:# Down:O Right:_ Up:_');
  env.reset(0);
  const moves = ['Left', 'Up', 'Up', 'Right', 'Right'];
  const beside = moves.map((a) => env.step(ans(a))).at(-1)!;
  // One step left of the goal, in the top row.
  assert.equal(beside.observation, '__PG\n_O__\n__O_\nOO__\nLeft:_ Down:_ Right:G Up:#');
});

test('renderLakeNeighbors: the player in a hole or on the goal is found too', () => {
  const lake = { size: 4, desc: ['FFFG', 'FHFF', 'FFHF', 'HHFF'], start: { row: 2, col: 1 }, goal: { row: 0, col: 3 } };
  assert.equal(renderLakeNeighbors(lake, { row: 3, col: 1 }), '___G\n_O__\n__O_\nOX__\nLeft:O Down:# Right:_ Up:_');
  const small = { size: 2, desc: ['FH', 'SG'], start: { row: 1, col: 0 }, goal: { row: 1, col: 1 } };
  assert.equal(renderLakeNeighbors(small, { row: 1, col: 1 }), '_O\n_√\nLeft:_ Down:# Right:# Up:O');
});

test('observation_format grid_neighbors is an allowed value', () => {
  assert.throws(() => new FrozenLakeEnv({ observation_format: 'image' }), /"grid", "coord", "grid_coord", "grid_neighbors", got "image"/);
});
