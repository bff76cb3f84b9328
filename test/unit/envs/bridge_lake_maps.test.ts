/**
 * The env bridge's FrozenLake (python/starpo_envs) plays starpo's maps and shows starpo's text: the golden maps of
 * test/fixtures/openenv/lake_maps.json (written by make_lake_maps.ts) are what starpo's generateMap and the Python
 * port both draw, and the Python renderings equal starpo's in every observation_format. The port needs only the
 * standard library, so this runs on the host's python3 without the bridge's venv.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { BRIDGE_PYTHON_DIR } from '../../../infra/env_venv';
import { generateMap, renderLake, renderLakeNeighbors } from '../../../src/envs/frozen_lake';
import { renderLakeCoords, renderLakeGridCoords } from '../../../src/envs/frozen_lake_coords';
import { Rng } from '../../../src/util/rng';

interface MapCase {
  size: number;
  p: number;
  maps: Record<string, string[]>;
}
const FIXTURE = join(__dirname, '../../fixtures/openenv/lake_maps.json');
const cases = JSON.parse(readFileSync(FIXTURE, 'utf8')) as MapCase[];

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

test('starpo draws the golden maps', () => {
  assert.deepEqual(
    cases.map((c) => c.size),
    [4, 6, 8],
  );
  assert.equal(Object.keys(cases[0].maps).length, 503, 'the quickstart lake: seeds 0..499 and three large ones');
  for (const { size, p, maps } of cases) {
    for (const [seed, desc] of Object.entries(maps)) {
      assert.deepEqual(generateMap(size, p, new Rng('frozen_lake/map', Number(seed))).desc, desc, `size ${size} p ${p} seed ${seed}`);
    }
  }
});

test("the bridge's Python port draws the same maps", () => {
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
print(json.dumps({f: [render(s["desc"], tuple(s["player"]), f) for s in json.load(sys.stdin)] for f in OBSERVATION_FORMATS}, ensure_ascii=False))`,
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
