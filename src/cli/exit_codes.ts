/** Exit codes of the `starpo` command (README, "Exit codes") and the CLI's own errors. */
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';

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
  if (err instanceof WorkflowNotFoundError) return EXIT.badInput; // an unknown run id
  if (name === 'InfraUnavailableError' || name === 'InfraStartError' || name === 'NoControlWorkerError') return EXIT.infraUnavailable;
  if (err instanceof WorkflowFailedError) return EXIT.runFailed;
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ECONNREFUSED' || code === 14) return EXIT.infraUnavailable;
  return EXIT.runFailed;
}
