/**
 * What both the HTML trajectory browser and `starpo trajectories` show: a step's trajectories as env
 * groups (trajGroupId: same tag, same start state) joined with the update's per-trajectory scores,
 * ranked by mean episode score, and the legend of the grid symbols in their observations. Pure.
 */

import type { RunConfig, Trajectory, TurnRecord } from '../contract';
import type { TrajectoryScore, TrajectoryScoresFile } from '../contract/trajectory_scores';
import { LAKE_SYMBOLS } from '../envs/frozen_lake';
import { parseSokobanConfig } from '../envs/sokoban';

/** One trajectory with what the update made of it (score null: not recorded). */
export interface ShownTrajectory {
  trajId: string;
  envId: number;
  episodeScore: number;
  success: boolean;
  /** How the episode ended, for display (outcomeText). */
  outcome: string;
  score: TrajectoryScore | null;
  turns: TurnRecord[];
}

/** One env group of a step. */
export interface ShownGroup {
  /** trajGroupId, "{tag}_{group_id}_{episode}_{seed}". */
  id: string;
  tag: string;
  groupId: number;
  seed: number;
  /** Mean episode score of the members. */
  meanScore: number;
  /** Fraction of members that succeeded. */
  successRate: number;
  /** Whether the StarPO-S filter kept the group (null: not recorded). */
  kept: boolean | null;
  /** Members, highest episode score first (ties: env id order). */
  trajectories: ShownTrajectory[];
}

/** A step's groups in rollout order, with the best and worst by mean episode score. */
export interface ShownStep {
  step: number;
  groups: ShownGroup[];
  /** Id of the group with the highest mean score (ties: higher success rate, then the first). */
  best: string;
  /** Id of the group with the lowest mean score (ties: lower success rate, then the last). */
  worst: string;
  /** Why the step's update made no optimizer step, when it did not. */
  skipReason: string | null;
}

/** How an episode ended: success, failed, or truncated with its cause (turn cap or sequence_length). */
export function outcomeText(t: Pick<Trajectory, 'success' | 'truncated' | 'truncatedBy'>): string {
  if (t.success) return 'success';
  if (!t.truncated) return 'failed';
  if (t.truncatedBy === 'max_steps') return 'truncated by the turn cap';
  if (t.truncatedBy === 'max_length') return 'truncated by sequence_length';
  return 'truncated';
}

/**
 * Groups a step's trajectories.
 * @param trajectories one step's trajectories of one split (non-empty)
 * @param scores the update's scores for them, or null when not recorded
 * @throws RangeError when there are no trajectories
 */
export function groupStep(step: number, trajectories: readonly Trajectory[], scores: TrajectoryScoresFile | null): ShownStep {
  if (trajectories.length === 0) throw new RangeError(`step ${step} has no trajectories`);
  const byId = new Map<string, Trajectory[]>();
  for (const t of trajectories) byId.set(t.trajGroupId, [...(byId.get(t.trajGroupId) ?? []), t]);
  const groups = [...byId.entries()].map(([id, members]): ShownGroup => {
    const shown = members
      .sort((a, b) => b.episodeScore - a.episodeScore || a.envId - b.envId)
      .map(
        (t): ShownTrajectory => ({
          trajId: t.trajId,
          envId: t.envId,
          episodeScore: t.episodeScore,
          success: t.success,
          outcome: outcomeText(t),
          score: scores?.trajectories[t.trajId] ?? null,
          turns: t.turns,
        }),
      );
    const first = members[0];
    return {
      id,
      tag: first.tag,
      groupId: first.groupId,
      seed: first.seed,
      meanScore: shown.reduce((s, t) => s + t.episodeScore, 0) / shown.length,
      successRate: shown.filter((t) => t.success).length / shown.length,
      kept: shown[0].score ? shown[0].score.kept : null,
      trajectories: shown,
    };
  });
  let best = groups[0];
  let worst = groups[0];
  for (const g of groups) {
    if (g.meanScore > best.meanScore || (g.meanScore === best.meanScore && g.successRate > best.successRate)) best = g;
    if (g.meanScore < worst.meanScore || (g.meanScore === worst.meanScore && g.successRate <= worst.successRate)) worst = g;
  }
  return { step, groups, best: best.id, worst: worst.id, skipReason: scores?.skipReason ?? null };
}

/**
 * [symbol, meaning] pairs of a tag's grid, from the env's own symbols (envs/frozen_lake.ts LAKE_SYMBOLS,
 * a Sokoban tag's grid_lookup/grid_vocab), or null when its env draws no grid (bandit, countdown).
 */
function symbolsOf(config: RunConfig, tag: string): ReadonlyArray<readonly [string, string]> | null {
  const env = config.custom_envs[tag];
  if (env?.env_type === 'frozen_lake') return LAKE_SYMBOLS;
  if (env?.env_type === 'sokoban') return parseSokobanConfig(env.env_config).grid_vocab;
  return null;
}

/**
 * The legend of the grid observations of `tags`: one line per distinct legend, e.g.
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
