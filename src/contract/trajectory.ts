/**
 * What a rollout activity plays and writes: the env groups of a shard, the trajectory records (one JSON
 * object per line of runs/<run>/rollouts/step-N/<split>-shard-K.jsonl.gz, read by the update), the
 * shard's commit record and its metric sums (docs/numerics.md §3-4).
 */
import { z } from 'zod';
import { objectRefSchema } from './store';

/** One env group of a step: its members share the reset seed (docs/numerics.md §3). */
export interface RolloutGroup {
  tag: string;
  groupId: number;
  /** Index of this group among the step's groups of its env group (g div num_env_groups). */
  episode: number;
  /** Reset seed shared by the group's members (uint32). */
  seed: number;
  /** "{tag}_{group_id}_{episode}_{seed}" (docs/numerics.md §3). */
  trajGroupId: string;
  /** Seed parts of the members' sampling streams; member env id e samples from Rng(...stream, e). */
  stream: Array<number | string>;
}

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

/** One whole multi-turn episode, packed token-in/token-out (docs/numerics.md §4 Packing). */
export interface Trajectory {
  /** "{tag}_{group_id}_{episode}_{seed}" (docs/numerics.md §3). */
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
   * (asynchronous rollouts, async_generation_ratio > 0). Absent: 0, the step's own policy.
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
  /** Ended by the turn cap (custom_envs.<tag>.max_steps, or the env's own) or the sequence_length cut. */
  truncated: boolean;
  /**
   * Why a truncated episode ended, in ROLL's EpisodeStopReason values (roll/utils/constants.py):
   * `max_steps` the turn cap, `max_length` the sequence_length cut. Absent when not truncated (and in
   * trajectories stored before it was recorded).
   */
  truncatedBy?: TruncationCause;
}

/** ROLL's EpisodeStopReason values for a truncated episode: the turn cap, or the sequence_length cut. */
export type TruncationCause = 'max_steps' | 'max_length';

/** Per-trajectory metric sums of a shard (rollout/metrics.ts sumMetrics; merged across shards in the workflow). */
export interface MetricSums {
  sums: Record<string, number>;
  counts: Record<string, number>;
  totals: Record<string, number>;
}

/**
 * Shape of a shard's commit record (`runs/<run>/rollouts/step-N/<split>-shard-K.json`), written after its
 * trajectories: their reference, the sha256 of the policy manifest that played them, the env pool's
 * counts and, for asynchronous rollouts, the policy's step and staleness. Rollouts reuse a committed
 * shard; readers find the verified trajectories of a step through it.
 */
export const shardRecordSchema = z.object({
  trajectories: objectRefSchema,
  policy: z.string(),
  totals: z.record(z.string(), z.number()),
  /** Asynchronous rollouts (async_generation_ratio > 0): the pipeline step of the policy that played the shard. */
  policyStep: z.number().int().nonnegative().optional(),
  /** Asynchronous rollouts: the step of the shard minus policyStep (every trajectory's `staleness`). */
  staleness: z.number().int().nonnegative().optional(),
  /** The tfjs backend and device that played the shard. */
  compute: z.object({ backend: z.string(), device: z.string() }).optional(),
});
/** A shard's commit record. */
export type ShardRecord = z.infer<typeof shardRecordSchema>;
