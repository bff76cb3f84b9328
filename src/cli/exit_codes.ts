/** Exit codes of the `starpo` command (README, "Exit codes"). */
import { WorkflowFailedError } from '@temporalio/client';

/** 0 ok, 1 run failed, 2 bad input, 3 infra unavailable. */
export const EXIT = { ok: 0, runFailed: 1, badInput: 2, infraUnavailable: 3 } as const;

/** Maps an error to its exit code by its class name (errors come from several modules). */
export function exitCodeOf(err: unknown): number {
  const name = err instanceof Error ? err.name : '';
  if (name === 'ConfigError' || name === 'InfraConfigError' || name === 'CommanderError') return EXIT.badInput;
  if (name === 'InfraUnavailableError' || name === 'InfraStartError') return EXIT.infraUnavailable;
  if (err instanceof WorkflowFailedError) return EXIT.runFailed;
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ECONNREFUSED' || code === 14) return EXIT.infraUnavailable;
  return EXIT.runFailed;
}
