/**
 * FrozenLake's `grid_neighbors` observation (starpo's own `observation_format`): the grid, then what lies on
 * each side of the player. A small decoder with rotary positions reads the goal's direction off the grid
 * well but hardly whether the next cell is a hole; the line below spells that out, and the game is unchanged.
 */

/** The player's symbols in a rendered grid: on ice, in a hole, on the goal (frozen_lake.ts LAKE_SYMBOLS). */
const PLAYER_SYMBOLS = ['P', 'X', '√'];

/** Sides in gymnasium's action order, with the (row, col) step each makes. */
const SIDES: ReadonlyArray<readonly [string, number, number]> = [
  ['Left', 0, -1],
  ['Down', 1, 0],
  ['Right', 0, 1],
  ['Up', -1, 0],
];

/**
 * The rendered grid, then one line naming the cell on each side of the player in action order, `#` beyond
 * the edge: "Left:_ Down:O Right:_ Up:#".
 * @param grid renderLake's output: rows of LAKE_SYMBOLS joined by "\n", with exactly one player symbol
 */
export function renderLakeNeighbors(grid: string): string {
  const rows = grid.split('\n');
  const row = rows.findIndex((line) => PLAYER_SYMBOLS.some((s) => line.includes(s)));
  const col = [...rows[row]].findIndex((ch) => PLAYER_SYMBOLS.includes(ch));
  const sides = SIDES.map(([name, dr, dc]) => `${name}:${[...(rows[row + dr] ?? '')][col + dc] ?? '#'}`);
  return `${grid}\n${sides.join(' ')}`;
}
