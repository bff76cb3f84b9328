/**
 * trajectory_scores.json: what one update did with each trajectory of its step (whether the StarPO-S filter kept
 * its env group, its normalised episode score, its advantage). The update activity writes it into its checkpoint
 * (TRAJECTORY_SCORES_NAME); `starpo report` and `starpo trajectories` read it.
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
