/**
 * Liveness defaults shared by the config schema and the workflow bundle (which must not import the zod
 * schema): how long the server waits for an activity's next heartbeat before it retries the attempt.
 */

/** Default of heartbeat_timeout_seconds (docs/durability.md, "Liveness"). */
export const HEARTBEAT_TIMEOUT_DEFAULT_SECONDS = 30;

/** The least heartbeat_timeout_seconds: room for the heartbeat relay's interval (a quarter of it) and a round trip. */
export const HEARTBEAT_TIMEOUT_MIN_SECONDS = 2;
