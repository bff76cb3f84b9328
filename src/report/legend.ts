/**
 * Legends of the grid observations a run shows (FrozenLake, Sokoban): one line per env type of the
 * given tags, from the env's own symbols (envs/frozen_lake.ts LAKE_SYMBOLS, a Sokoban tag's
 * grid_lookup/grid_vocab). Envs whose observations are plain text (bandit, countdown) have none. Pure.
 */
import type { RunConfig } from '../contract';
import { LAKE_SYMBOLS } from '../envs/frozen_lake';
import { parseSokobanConfig } from '../envs/sokoban';

/** [symbol, meaning] pairs of a tag's grid, or null when its env draws no grid. */
function symbolsOf(config: RunConfig, tag: string): ReadonlyArray<readonly [string, string]> | null {
  const env = config.custom_envs[tag];
  if (env?.env_type === 'frozen_lake') return LAKE_SYMBOLS;
  if (env?.env_type === 'sokoban') return parseSokobanConfig(env.env_config).grid_vocab;
  return null;
}

/**
 * One legend line per distinct grid legend of `tags`, e.g.
 * `FrozenLake: P player, _ frozen, O hole, G goal, X player in a hole, √ player on the goal`
 * (tags with the same legend share a line: `A, B: ...`).
 */
export function gridLegends(config: RunConfig, tags: readonly string[]): string[] {
  const byLegend = new Map<string, string[]>();
  for (const tag of new Set(tags)) {
    const symbols = symbolsOf(config, tag);
    if (!symbols) continue;
    const legend = symbols.map(([s, meaning]) => `${s} ${meaning}`).join(', ');
    byLegend.set(legend, [...(byLegend.get(legend) ?? []), tag]);
  }
  return [...byLegend].map(([legend, shared]) => `${shared.join(', ')}: ${legend}`);
}
