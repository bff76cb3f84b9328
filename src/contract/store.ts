/**
 * What the object store holds, as it crosses processes: object references (readers verify length and
 * sha256), a checkpoint's manifest written last (a checkpoint exists once it exists), the latest.json /
 * initial.json pointers, and what an activity hands the workflow when an input it reads is corrupt
 * or missing (the run then replays from an older checkpoint).
 */
import { z } from 'zod';

/** Lower-case hex sha256. */
export const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Shape of an ObjectRef inside stored JSON (latest.json, shard records). */
export const objectRefSchema = z.object({
  bucket: z.string(),
  key: z.string(),
  sha256: z.string().regex(SHA256_HEX),
  bytes: z.number().int().nonnegative(),
});

/** A stored object: where it is and what its content must be (`bytes`: content length; `sha256`: lower-case hex). */
export interface ObjectRef {
  bucket: string;
  key: string;
  sha256: string;
  bytes: number;
}

/** Shape of a checkpoint's manifest.json: every object's name, key, bytes and sha256, the writer's meta, the time. */
export const checkpointManifestSchema = z.object({
  format: z.literal('starpo-checkpoint/1'),
  prefix: z.string(),
  objects: z.array(z.object({ name: z.string(), key: z.string(), bytes: z.number().int().nonnegative(), sha256: z.string().regex(SHA256_HEX) })),
  meta: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
});
/** Contents of a checkpoint's manifest.json. */
export type CheckpointManifest = z.infer<typeof checkpointManifestSchema>;

/** Shape of runs/<run>/latest.json and initial.json: the run, the step and the manifest a pointer names. */
export const latestPointerSchema = z.object({ runId: z.string(), step: z.number().int().nonnegative(), manifest: objectRefSchema });
/** Contents of runs/<run>/latest.json (or initial.json). */
export type LatestPointer = z.infer<typeof latestPointerSchema>;

/**
 * Failure type of the non-retryable ApplicationFailure an activity throws when an input it reads from
 * the store (its policy checkpoint, a trajectory shard) is corrupt or missing. The workflow replays the
 * run from `details[0]` (a CheckpointFallback); steps are deterministic, so the replay rewrites the
 * damaged objects with identical bytes and ends with the same weights.
 */
export const CHECKPOINT_CORRUPT_ERROR = 'CheckpointCorruptError';

/** details[0] of a CheckpointCorruptError: where to replay the run from, and what was wrong. */
export interface CheckpointFallback {
  /** Pipeline step of the newest complete, verified checkpoint to continue from. */
  step: number;
  /** Its manifest. */
  checkpoint: ObjectRef;
  /** Key of the unusable object. */
  object: string;
  /** Why it is unusable (e.g. `object ... is corrupt (sha256 mismatch): ...`). */
  reason: string;
}
