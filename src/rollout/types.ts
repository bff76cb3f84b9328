/**
 * Trajectory records: what a rollout activity writes (one JSON object per line of
 * runs/<run>/rollouts/step-N/<split>-shard-K.jsonl.gz) and the update activity reads.
 * Source: SPEC.md §3-4 (ids, masks, episode score, per-trajectory metrics).
 */

/** One turn of an episode as the env saw it. */
export interface TurnRecord {
  /** The observation shown before this turn (text). */
  observation: string;
  /** The model's raw response text, special tokens included. */
  response: string;
  /** The parsed action name, or null when the answer did not parse. */
  action: string | null;
  /** The env reward of this turn (format penalty included). */
  reward: number;
  /** Whether the response parsed into a valid action. */
  actionIsValid: boolean;
  /** Whether the action changed the env state. */
  actionIsEffective: boolean;
}

/** One whole multi-turn episode, packed token-in/token-out (SPEC.md §4 Packing). */
export interface Trajectory {
  /** "{tag}_{group_id}_{episode}_{seed}" (SPEC.md §3). */
  trajGroupId: string;
  /** trajGroupId + "_" + envId. */
  trajId: string;
  tag: string;
  groupId: number;
  envId: number;
  /** The env reset seed, equal for every member of a group. */
  seed: number;
  split: 'train' | 'val';
  /** Pipeline step it was played for (its seeds; the update that consumes it). */
  step: number;
  /**
   * Policy versions it lags behind `step`: it was sampled by the checkpoint of step `step - staleness`
   * (asynchronous rollouts, async_generation_ratio > 0; src/algo/staleness.ts). Absent: 0, the step's own policy.
   */
  staleness?: number;
  /** Token ids of prompt_0 ++ response_0 ++ ... (length L, int). */
  inputIds: number[];
  /** 1 on sampled response tokens (stop token included), 0 on prompt tokens; length L. */
  responseMask: number[];
  /** Log-prob (nats, raw distribution) of each sampled token at its position, 0 elsewhere; length L. */
  sampleLogprobs: number[];
  turns: TurnRecord[];
  /** Sum of the env rewards of all turns. */
  episodeScore: number;
  /** The env's success flag after the last turn. */
  success: boolean;
  /** Ended by the turn cap or the sequence_length cut, not by the env. */
  truncated: boolean;
}
