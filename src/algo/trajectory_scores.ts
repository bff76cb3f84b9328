/**
 * What an update did with each trajectory it received: trajectory_scores.json of its checkpoint (contract/trajectory_scores.ts).
 */
import type { TrajectoryScore, TrajectoryScoresFile } from '../contract/trajectory_scores';

/**
 * What the update did with each trajectory it received (trajectory_scores.json of its checkpoint).
 * @param trajIds [B] trajIds of every trajectory the update received, in order
 * @param keep indices into trajIds of the trajectories that survived the filter, ascending (filterGroups keep)
 * @param normalizedScores [keep.length] normalised scores of the kept trajectories, in keep order
 * @param advantages [keep.length][T] final token advantages of the kept trajectories (0 off the mask)
 * @param mask [keep.length][T] 0/1 shifted response mask of the kept trajectories
 * @throws RangeError when the kept arrays do not have keep.length rows
 */
export function trajectoryScores(opts: {
  step: number;
  trajIds: readonly string[];
  keep: readonly number[];
  normalizedScores: readonly number[];
  advantages: readonly (readonly number[])[];
  mask: readonly (readonly number[])[];
  skipReason?: string | null;
}): TrajectoryScoresFile {
  const { keep } = opts;
  if (opts.normalizedScores.length !== keep.length || opts.advantages.length !== keep.length || opts.mask.length !== keep.length) {
    throw new RangeError(
      `trajectoryScores: ${keep.length} kept trajectories but ${opts.normalizedScores.length} scores, ${opts.advantages.length} advantage rows, ${opts.mask.length} mask rows`,
    );
  }
  const trajectories: Record<string, TrajectoryScore> = {};
  for (const id of opts.trajIds) trajectories[id] = { kept: false, normalizedScore: null, advantage: null };
  keep.forEach((index, k) => {
    let sum = 0;
    let n = 0;
    opts.mask[k].forEach((m, t) => {
      if (m > 0) {
        sum += opts.advantages[k][t];
        n += 1;
      }
    });
    trajectories[opts.trajIds[index]] = { kept: true, normalizedScore: opts.normalizedScores[k], advantage: n > 0 ? sum / n : null };
  });
  return { format: 'starpo-trajectory-scores/1', step: opts.step, skipReason: opts.skipReason ?? null, trajectories };
}
