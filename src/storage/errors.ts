/**
 * Errors of the object store (DESIGN.md, "Object store layout": readers verify sha256).
 */

/** Thrown when stored bytes do not match their reference (length or sha256) or a manifest is malformed. */
export class CorruptObjectError extends Error {
  override name = 'CorruptObjectError';
  /**
   * @param key object key. @param expected what the reference promised (e.g. `sha256 ab12.., 120 bytes`).
   * @param actual what was read.
   */
  constructor(
    readonly key: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`object ${key} is corrupt: expected ${expected}, got ${actual}`);
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
