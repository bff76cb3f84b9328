/**
 * The env bridge's FrozenLake (python/starpo_envs) plays starpo's maps and shows starpo's text: its Python port of
 * generateMap draws, for every seed here, the map starpo's frozen_lake draws, and its renderings equal starpo's in
 * every observation_format. The port needs only the standard library, so this runs on the host's python3 without
 * the bridge's venv.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { BRIDGE_PYTHON_DIR } from '../../../infra/env_venv';
import { generateMap, renderLake, renderLakeNeighbors } from '../../../src/envs/frozen_lake';
import { renderLakeCoords, renderLakeGridCoords } from '../../../src/envs/frozen_lake_coords';
import { Rng } from '../../../src/util/rng';

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
/** Seeds as large as starpo draws (uint32) and allows (safe integers): String(seed) must match Python's str. */
const LARGE = [2 ** 32 - 1, 3_141_592_653, 2 ** 53 - 1];
/** The quickstart's 4x4 lake at p 0.8, then larger and sparser lakes. */
const cases = [
  { size: 4, p: 0.8, seeds: [...range(500), ...LARGE] },
  { size: 6, p: 0.6, seeds: [...range(50), ...LARGE] },
  { size: 8, p: 0.9, seeds: range(20) },
].map(({ size, p, seeds }) => ({
  size,
  p,
  maps: Object.fromEntries(seeds.map((seed) => [seed, generateMap(size, p, new Rng('frozen_lake/map', seed)).desc])),
}));

/** Runs `script` on the host's python3 with the bridge's package importable; returns its stdout as JSON. */
function python(script: string, input: unknown): unknown {
  const r = spawnSync('python3', ['-c', script], {
    input: JSON.stringify(input),
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: BRIDGE_PYTHON_DIR },
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test("the bridge's Python port draws starpo's maps (503 seeds of the quickstart's lake, larger and sparser lakes)", () => {
  const drawn = python(
    `import json, sys
from starpo_envs.lake_map import generate_map
cases = json.load(sys.stdin)
print(json.dumps([{**c, "maps": {s: generate_map(c["size"], c["p"], int(s)) for s in c["maps"]}} for c in cases]))`,
    cases,
  );
  assert.deepEqual(drawn, cases);
});

test("the bridge's Python renderings equal starpo's in every observation_format", () => {
  // Every cell of a few maps, so the player stands on the start, ice, holes, the goal and every edge.
  const states = cases.flatMap(({ size, maps }) =>
    Object.values(maps)
      .slice(0, 3)
      .flatMap((desc) => Array.from({ length: size * size }, (_, i) => ({ desc, player: [Math.floor(i / size), i % size] }))),
  );
  const rendered = python(
    `import json, sys
from starpo_envs.lake_map import OBSERVATION_FORMATS, render
states = json.load(sys.stdin)
print(json.dumps({f: [render(s["desc"], tuple(s["player"]), f) for s in states] for f in OBSERVATION_FORMATS}, ensure_ascii=False))`,
    states,
  ) as Record<string, string[]>;
  assert.deepEqual(Object.keys(rendered), ['grid', 'coord', 'grid_coord', 'grid_neighbors']);
  states.forEach(({ desc, player }, i) => {
    const map = { size: desc.length, desc };
    const pos = { row: player[0], col: player[1] };
    const grid = renderLake({ ...map, start: pos, goal: pos }, pos);
    const coords = renderLakeCoords(map, pos);
    assert.equal(rendered.grid[i], grid);
    assert.equal(rendered.coord[i], coords);
    assert.equal(rendered.grid_coord[i], renderLakeGridCoords(coords, grid));
    assert.equal(rendered.grid_neighbors[i], renderLakeNeighbors({ ...map, start: pos, goal: pos }, pos));
  });
});
