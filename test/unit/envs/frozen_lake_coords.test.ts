import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FrozenLakeEnv } from '../../../src/envs/frozen_lake';

const ans = (a: string): string => `<answer>${a}</answer><|im_end|>`;

// Map of seed 0 (test/unit/envs/frozen_lake.test.ts): '___G\n_O__\n_PO_\nOO__', start (2, 1), goal (0, 3).
// Expected strings follow RAGEN's format_coordinate_render (ragen/env/frozen_lake/utils.py).
const HEAD = 'Board size: 4 rows x 4 cols (zero-indexed).\nStart: (2, 1)\nGoal: (0, 3)';
const HOLES = 'Holes: (1, 1), (2, 2), (3, 0), (3, 1)';

test('observation_format coord: start, goal, player and holes as zero-indexed (row, col)', () => {
  const env = new FrozenLakeEnv({ is_slippery: false, observation_format: 'coord' });
  assert.equal(env.reset(0).observation, `${HEAD}\nPlayer: (2, 1)\n${HOLES}`);
  assert.equal(env.step(ans('Left')).observation, `${HEAD}\nPlayer: (2, 0)\n${HOLES}`);
  env.reset(0);
  assert.equal(env.step(ans('Down')).observation, `${HEAD}\nPlayer in hole: (3, 1)\n${HOLES}`);
  env.reset(0);
  const moves = ['Left', 'Up', 'Up', 'Right', 'Right', 'Right'];
  const last = moves.map((a) => env.step(ans(a))).at(-1)!;
  assert.equal(last.info.success, true);
  assert.equal(last.observation, `${HEAD}\nPlayer on goal: (0, 3)\n${HOLES}`);
});

test('observation_format coord: no Holes line on a map without holes', () => {
  const env = new FrozenLakeEnv({ is_slippery: false, p: 1, observation_format: 'coord' });
  const lines = env.reset(7).observation.split('\n');
  assert.equal(lines.length, 4);
  assert.deepEqual(
    lines.map((l) => l.split(':')[0]),
    ['Board size', 'Start', 'Goal', 'Player'],
  );
});

test('observation_format grid_coord: the coordinates, then the grid; grid stays the default', () => {
  const both = new FrozenLakeEnv({ is_slippery: false, observation_format: 'grid_coord' });
  assert.equal(both.reset(0).observation, `Coordinates: \n${HEAD}\nPlayer: (2, 1)\n${HOLES}\nGrid Map: \n___G\n_O__\n_PO_\nOO__`);
  const grid = new FrozenLakeEnv({ is_slippery: false });
  assert.equal(grid.config.observation_format, 'grid');
  assert.equal(grid.reset(0).observation, '___G\n_O__\n_PO_\nOO__');
});

test('observation_format: a bad value is named with what is allowed', () => {
  assert.throws(
    () => new FrozenLakeEnv({ observation_format: 'image' }),
    /env_config of frozen_lake: observation_format must be one of "grid", "coord", "grid_coord", "grid_neighbors", got "image"/,
  );
});
