/**
 * Errors of the infra module. Messages say what failed and what to do instead (the CLI maps them to
 * exit codes, cli/exit_codes.ts).
 */

/** How to use servers that already run instead of local ones; appended to InfraUnavailableError messages. */
export const ENV_HINT =
  'To use servers that already run instead, set TEMPORAL_ADDRESS=host:port (or --profile, a temporal.toml profile), S3_ENDPOINT=https://host:port, ' +
  'S3_ACCESS_KEY, S3_SECRET_KEY (optional: S3_BUCKET, default starpo; TEMPORAL_NAMESPACE, default default; TEMPORAL_API_KEY; TEMPORAL_TLS*; S3_REGION; S3_SESSION_TOKEN). ' +
  'For MinIO, put a `minio` binary on PATH or set MINIO_BINARY=/path/to/minio.';

/**
 * Thrown when a server binary can be neither found in the cache nor installed (pip and go both failed),
 * or the servers are unreachable. The CLI exits with code 3.
 */
export class InfraUnavailableError extends Error {
  override name = 'InfraUnavailableError';
  /**
   * @param message says what failed: the installs tried, with each command and the tail of its stderr, or
   *   the server that did not answer. @param opts.hint append ENV_HINT on its own line (default true).
   */
  constructor(message: string, opts: { hint?: boolean } = {}) {
    super(opts.hint === false ? message : `${message}\n${ENV_HINT}`);
  }
}

/** Thrown when a server was started but did not become healthy before its deadline; the message holds the log tail. */
export class InfraStartError extends Error {
  override name = 'InfraStartError';
}

/** Thrown when environment variables describing external servers are incomplete or malformed (names the variable). */
export class InfraConfigError extends Error {
  override name = 'InfraConfigError';
}
