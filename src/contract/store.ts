/**
 * What the object store holds, as it crosses processes: object references (readers verify length and
 * sha256), a checkpoint's manifest written last (a checkpoint exists once it exists) and the
 * latest.json / initial.json pointers.
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
  objects: z.array(
    z.object({ name: z.string(), key: z.string(), bytes: z.number().int().nonnegative(), sha256: z.string().regex(SHA256_HEX) }),
  ),
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
 * An object's content produced piece by piece, for objects too big to build as one buffer (a checkpoint's
 * weights and optimizer state): `bytes` in all, yielded by `chunks()` in order. The store hashes the chunks as
 * they pass and may reuse nothing of them after the next one is asked for.
 */
export interface StreamedObject {
  bytes: number;
  chunks(): AsyncIterable<Uint8Array>;
}

/**
 * Takes an object's content piece by piece as the store reads it. The sha256 is checked once the last chunk has
 * passed: when it fails, the store throws and whatever the sink built must be dropped.
 */
export interface ObjectSink {
  write(chunk: Uint8Array): void;
}
