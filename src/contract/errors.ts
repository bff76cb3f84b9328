/**
 * Failure type names that cross Temporal: the types activity retries give up on, and the types the
 * workflow reads from a failed activity. An error class sets `name` to one of these, so the worker's
 * failure converter reports it under that type.
 */

/** A config that cannot run (ConfigError). */
export const CONFIG_ERROR = 'ConfigError';
/** Stored bytes that do not match their reference (storage/errors.ts). */
export const CORRUPT_OBJECT_ERROR = 'CorruptObjectError';
/** A key part (run id, step, split, shard, name) outside what the store allows (InvalidKeyPartError). */
export const INVALID_KEY_PART_ERROR = 'InvalidKeyPartError';
/** Every env group of a step failed, replacements included: a broken env, not something a retry fixes. */
export const ENV_FAILURE = 'EnvFailure';

/** Failure types an activity is not retried on: the same input would fail the same way. */
export const NON_RETRYABLE_ERROR_TYPES: readonly string[] = [CONFIG_ERROR, CORRUPT_OBJECT_ERROR, INVALID_KEY_PART_ERROR];

/**
 * A config that cannot run (bad config files and CLI arguments; the CLI exits 2). `problems` holds one
 * line per bad key, each naming the key, the value and what is allowed.
 */
export class ConfigError extends Error {
  override name = CONFIG_ERROR;
  readonly problems: string[];

  constructor(source: string, problems: string[]) {
    super(`${source}: invalid config\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

/** Thrown for a key part outside the allowed characters or range; the message names the value and what is allowed. */
export class InvalidKeyPartError extends Error {
  override name = INVALID_KEY_PART_ERROR;
}
