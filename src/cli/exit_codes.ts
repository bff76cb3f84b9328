/**
 * Exit codes of the `starpo` command (docs/operating.md, "Exit codes and errors") and the CLI's own errors. Errors are told
 * apart by class name, so this file loads no SDK (every CLI start imports it).
 */
import { CONFIG_ERROR, INVALID_KEY_PART_ERROR } from '../contract/errors';

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

/** A run closed without completing (failed, terminated, timed out, cancelled): exit 1, one message. */
export class RunEndedError extends Error {
  override name = 'RunEndedError';
}

/** Network error codes meaning a server did not answer at all. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ECONNRESET', 'EAI_AGAIN']);

/** true for an error of a connection that no server answered: a network error code or gRPC UNAVAILABLE (14). */
export function isUnreachable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 14 || (typeof code === 'string' && UNREACHABLE_CODES.has(code));
}

/** Maps an error to its exit code by its class name (errors come from several modules). */
export function exitCodeOf(err: unknown): number {
  const name = err instanceof Error ? err.name : '';
  if (name === CONFIG_ERROR || name === 'InfraConfigError' || name === 'CommanderError' || name === 'BadInputError') return EXIT.badInput;
  if (name === 'GgufError' || name === 'UnknownModelError') return EXIT.badInput; // a GGUF file that is not converted (model/gguf)
  if (name === 'UnknownBackendError') return EXIT.badInput; // STARPO_BACKEND names no backend (model/backend_choice.ts)
  if (name === INVALID_KEY_PART_ERROR) return EXIT.badInput; // a run id, step or name outside the allowed key characters (contract/run.ts)
  if (name === 'WorkflowNotFoundError') return EXIT.badInput; // an unknown run id (@temporalio/client)
  if (name === 'InfraUnavailableError' || name === 'InfraStartError' || name === 'NoControlWorkerError') return EXIT.infraUnavailable;
  if (name === 'NativeInstallError' || name === 'NativeBackendError') return EXIT.infraUnavailable; // the host lacks a tool or the native build
  if (name === 'WorkflowFailedError' || name === 'RunEndedError') return EXIT.runFailed;
  return isUnreachable(err) ? EXIT.infraUnavailable : EXIT.runFailed;
}

/**
 * The line(s) the CLI prints for an error without --verbose: its message, prefixed "server unreachable:"
 * when the server did not answer (isUnreachable: such messages name only the address); no stack trace.
 */
export function errorMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return isUnreachable(err) ? `server unreachable: ${message}` : message;
}
