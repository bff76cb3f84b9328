/**
 * The commit record of a rollout shard (rolloutRecordKey, `runs/<run>/rollouts/step-N/<split>-shard-K.json`),
 * written after its trajectories: their reference (sha256, bytes), the sha256 of the policy manifest that
 * played them, the env pool's counts and, for asynchronous rollouts, the policy's step and staleness.
 * Rollouts reuse a committed shard; readers find the verified trajectories of a step through it.
 */
import { z } from 'zod';

/** Shape of a shard record (JSON). */
export const shardRecordSchema = z.object({
  trajectories: z.object({ bucket: z.string(), key: z.string(), sha256: z.string(), bytes: z.number() }),
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
