/**
 * FrozenLake's coordinate observations (RAGEN env_config `observation_format`, ragen/env/frozen_lake): the
 * entities of the map as (row, col) lists, alone ("coord") or above the grid ("grid_coord"). RAGEN-2 trains
 * on the coordinate form: a model then reads where the player, the goal and the holes are instead of
 * working out rows and columns from the characters of the grid.
 */

/** A zero-indexed grid cell (frozen_lake.ts's Pos, restated so the two files do not import each other). */
interface Cell {
  row: number;
  col: number;
}

/**
 * The `observation_format` values: as in RAGEN, the grid (ROLL's render), coordinates, or both; and
 * starpo's grid_neighbors (frozen_lake.ts renderLakeNeighbors).
 */
export const LAKE_OBSERVATION_FORMATS = ['grid', 'coord', 'grid_coord', 'grid_neighbors'] as const;
/** One of LAKE_OBSERVATION_FORMATS. */
export type LakeObservationFormat = (typeof LAKE_OBSERVATION_FORMATS)[number];

/** Cells of `desc` holding `symbol`, row-major (numpy argwhere's order). */
function cellsOf(desc: readonly string[], symbol: string): Cell[] {
  const out: Cell[] = [];
  desc.forEach((line, row) => {
    for (let col = 0; col < line.length; col++) if (line[col] === symbol) out.push({ row, col });
  });
  return out;
}

/**
 * The coordinate description, zero-indexed, one line per entity kind in RAGEN's order: board size, Start,
 * Goal, the player (as "Player", "Player on goal" or "Player in hole"), Holes (omitted when there are none).
 */
export function renderLakeCoords(map: { size: number; desc: readonly string[] }, player: Cell): string {
  const here = map.desc[player.row][player.col];
  const playerLabel = here === 'G' ? 'Player on goal' : here === 'H' ? 'Player in hole' : 'Player';
  const entries: Array<[string, Cell[]]> = [
    ['Start', cellsOf(map.desc, 'S')],
    ['Goal', cellsOf(map.desc, 'G')],
    [playerLabel, [player]],
    ['Holes', cellsOf(map.desc, 'H')],
  ];
  const lines = [`Board size: ${map.size} rows x ${map.size} cols (zero-indexed).`];
  for (const [label, cells] of entries) {
    if (cells.length > 0) lines.push(`${label}: ${cells.map((p) => `(${p.row}, ${p.col})`).join(', ')}`);
  }
  return lines.join('\n');
}

/** "grid_coord": the coordinates, then the grid, under RAGEN's headings. */
export function renderLakeGridCoords(coords: string, grid: string): string {
  return `Coordinates: \n${coords}\nGrid Map: \n${grid}`;
}
