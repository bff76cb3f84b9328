/**
 * Object references: the only way big things (weights, trajectories, metrics) cross Temporal or a
 * process boundary. Readers verify length and sha256 (DESIGN.md, "Object store layout").
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
