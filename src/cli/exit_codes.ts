/**
 * Exit codes of the `starpo` command (README, "Exit codes") and the CLI's own errors. Errors are told
 * apart by class name, so this file loads no SDK (every CLI start imports it).
 */

/** 0 ok, 1 run failed, 2 bad input, 3 infra unavailable. */
export const EXIT = { ok: 0, runFailed: 1, badInput: 2, infraUnavailable: 3 } as const;

/** A request the CLI refuses: a run in the wrong state for it, a rejected update (exit 2). */
export class BadInputError extends Error {
  override name = 'BadInputError';
}

/** No control worker answered a query: nothing can act on the run now (exit 3). */
export class NoControlWorkerError extends Error {
  override name = 'NoControlWorkerError';
}

/** Maps an error to its exit code by its class name (errors come from several modules). */
export function exitCodeOf(err: unknown): number {
  const name = err instanceof Error ? err.name : '';
  if (name === 'ConfigError' || name === 'InfraConfigError' || name === 'CommanderError' || name === 'BadInputError') return EXIT.badInput;
  if (name === 'InvalidKeyPartError') return EXIT.badInput; // a run id, step or name outside the allowed key characters (storage/keys.ts)
  if (name === 'WorkflowNotFoundError') return EXIT.badInput; // an unknown run id (@temporalio/client)
  if (name === 'InfraUnavailableError' || name === 'InfraStartError' || name === 'NoControlWorkerError') return EXIT.infraUnavailable;
  if (name === 'WorkflowFailedError') return EXIT.runFailed;
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ECONNREFUSED' || code === 14) return EXIT.infraUnavailable;
  return EXIT.runFailed;
}

/**
 * The line(s) the CLI prints for an error without --verbose: its message, prefixed "server unreachable:"
 * for a refused connection or gRPC UNAVAILABLE (which name only the address); no stack trace.
 */
export function errorMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ECONNREFUSED' || code === 14 ? `server unreachable: ${message}` : message;
}
