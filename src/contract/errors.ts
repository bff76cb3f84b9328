/**
 * Failure type names that cross Temporal: the types activity retries give up on, and the types the
 * workflow reads from a failed activity. Each error class is named as its type and sets `name` to it: the
 * SDK's failure converter reports a thrown error under its class (constructor) name.
 */
import type { ObjectRef } from './store';

/** A config that cannot run (ConfigError). */
export const CONFIG_ERROR = 'ConfigError';
/** Stored bytes that do not match their reference (storage/errors.ts). */
export const CORRUPT_OBJECT_ERROR = 'CorruptObjectError';
/** A key part (run id, step, split, shard, name) outside what the store allows (InvalidKeyPartError). */
export const INVALID_KEY_PART_ERROR = 'InvalidKeyPartError';
/** An input in the store is corrupt or missing: the run replays from the CheckpointFallback in details[0]. */
export const CHECKPOINT_CORRUPT_ERROR = 'CheckpointCorruptError';
/**
 * A broken env: every env group of a step (or every warm-up demonstration) failed, replacements included, or
 * an env could not be created. Episodes are seeded, so a retry plays the same failures: the run fails instead
 * of occupying the workers it shares with other runs (docs/operating.md, "Many runs on one cluster").
 */
export const ENV_FAILURE = 'EnvFailureError';

/**
 * A backend ran out of memory (wasm heap, a TensorFlow allocation). The worker that hit it exits so its
 * supervisor restarts it clean; the failure is retried once, on a fresh process, only when the attempt ran in a
 * process that had run other activities (docs/durability.md, "A backend out of memory").
 */
export const OUT_OF_MEMORY_ERROR = 'BackendOutOfMemoryError';

/** details[0] of a BackendOutOfMemoryError failure. */
export interface OutOfMemoryDetails {
  /** The worker role whose backend failed: 'update' or 'rollout' (its task queue). */
  role: string;
  /** The activity type, e.g. 'update', 'rollout', 'prepareRun' (the warm-up). */
  activity: string;
  /** The tfjs backend: 'wasm' or 'tensorflow'. */
  backend: string;
  /** The micro-batch or generation batch it computed, when known. */
  shape: { kind: string; rows: number; tokens: number } | null;
  /** Bytes of the allocation that failed, when the backend says (the wasm guard, TensorFlow's message). */
  requestBytes: number | null;
  /** Bytes held by live tensors when it failed. */
  heldBytes: number;
  /** What the backend can hold: the wasm heap's ceiling, or the host's memory for TensorFlow. */
  capacityBytes: number;
  /** The backend's own words. */
  reason: string;
}

/** Failure types an activity is not retried on: the same input would fail the same way. */
export const NON_RETRYABLE_ERROR_TYPES: readonly string[] = [CONFIG_ERROR, CORRUPT_OBJECT_ERROR, INVALID_KEY_PART_ERROR, ENV_FAILURE];

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

/**
 * A bad `custom_envs.<tag>.env_config` (thrown by the envs' config parsers): the message names the key, the
 * value and what is allowed; `key` is the env_config key it is about, so preflight can name the file or
 * command-line argument that set it (undefined when two keys conflict: the message names both).
 */
export class EnvConfigError extends Error {
  override name = 'EnvConfigError';
  constructor(
    readonly key: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** A broken env (ENV_FAILURE); the message names the tag, the env and the first failure. */
export class EnvFailureError extends Error {
  override name = ENV_FAILURE;
}

/** Thrown for a key part outside the allowed characters or range; the message names the value and what is allowed. */
export class InvalidKeyPartError extends Error {
  override name = INVALID_KEY_PART_ERROR;
}

/**
 * details[0] of the non-retryable CheckpointCorruptError an activity throws when an input it reads from
 * the store (its policy checkpoint, a trajectory shard) is corrupt or missing: where the run replays
 * from, and what was wrong. Steps are deterministic, so the replay rewrites the damaged objects with
 * identical bytes and ends with the same weights.
 */
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
