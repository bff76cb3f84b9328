/**
 * What one update did with each trajectory of its step: whether the StarPO-S filter kept the
 * trajectory's env group, its normalised episode score and its advantage. The update activity stores
 * them in the checkpoint it writes (TRAJECTORY_SCORES_NAME, listed with its sha256 in the manifest) so
 * `starpo report` and `starpo trajectories` can show them. Pure, tfjs-free.
 */

/** The update's view of one trajectory. */
export interface TrajectoryScore {
  /** Whether the StarPO-S variance filter (rollout_filter_ratio / _type) kept its env group. */
  kept: boolean;
  /**
   * The episode score after reward_normalization (grouping, method) and reward_clip, the reward placed
   * on the trajectory's last sampled token; null when its group was filtered out (ROLL normalises after
   * filtering) or the update was skipped.
   */
  normalizedScore: number | null;
  /**
   * Mean over the trajectory's sampled response tokens (the shifted response mask) of the final token
   * advantage, i.e. after whiten_advantages and advantage_clip, as the actor loss used it; null when
   * its group was filtered out, the update was skipped, or it has no sampled token.
   */
  advantage: number | null;
}

/** Contents of a checkpoint's trajectory_scores.json. */
export interface TrajectoryScoresFile {
  format: 'starpo-trajectory-scores/1';
  /** The pipeline step whose rollouts (runs/<run>/rollouts/step-N) the update trained on. */
  step: number;
  /** Why the update made no optimizer step (every group filtered out), else null. */
  skipReason: string | null;
  /** Every train trajectory of the step, by trajId. */
  trajectories: Record<string, TrajectoryScore>;
}

/**
 * Builds the scores of a step.
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
    throw new RangeError(`trajectoryScores: ${keep.length} kept trajectories but ${opts.normalizedScores.length} scores, ${opts.advantages.length} advantage rows, ${opts.mask.length} mask rows`);
  }
  const trajectories: Record<string, TrajectoryScore> = {};
  for (const id of opts.trajIds) trajectories[id] = { kept: false, normalizedScore: null, advantage: null };
  keep.forEach((index, k) => {
    let sum = 0;
    let n = 0;
    opts.mask[k].forEach((m, t) => {
      if (m > 0) { sum += opts.advantages[k][t]; n += 1; }
    });
    trajectories[opts.trajIds[index]] = { kept: true, normalizedScore: opts.normalizedScores[k], advantage: n > 0 ? sum / n : null };
  });
  return { format: 'starpo-trajectory-scores/1', step: opts.step, skipReason: opts.skipReason ?? null, trajectories };
}
