/**
 * Errors of the object store (docs/design.md, "The object store": readers verify sha256).
 */
import { CORRUPT_OBJECT_ERROR } from '../contract/errors';

/** Thrown when stored bytes do not match their reference (length or sha256) or a manifest is malformed. */
export class CorruptObjectError extends Error {
  override name = CORRUPT_OBJECT_ERROR;
  /**
   * @param key object key. @param expected what the reference promised (e.g. `sha256 ab12..`).
   * @param actual what was read. @param reason the kind of damage, e.g. `sha256 mismatch`, `invalid manifest`.
   */
  constructor(
    readonly key: string,
    readonly expected: string,
    readonly actual: string,
    readonly reason = 'unexpected content',
  ) {
    super(`object ${key} is corrupt (${reason}): expected ${expected}, got ${actual}`);
  }
}

/** Thrown when an object that must exist is missing (names bucket and key). */
export class ObjectNotFoundError extends Error {
  override name = 'ObjectNotFoundError';
  constructor(
    readonly bucket: string,
    readonly key: string,
  ) {
    super(`object ${key} not found in bucket ${bucket}`);
  }
}

/** true for the errors that make a stored object unusable (corrupt or missing), as opposed to, say, a dead S3 server. */
export function isUnusable(err: unknown): err is CorruptObjectError | ObjectNotFoundError {
  return err instanceof CorruptObjectError || err instanceof ObjectNotFoundError;
}
