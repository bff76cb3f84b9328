/**
 * The run a command names, for every command that reads a run from the object store (report,
 * trajectories, eval, export): the run id checked as a command argument before anything connects,
 * and the run spec loaded with one message for an unknown run (exit 2) and one for an unreachable
 * S3 server (exit 3).
 */
import { InvalidArgumentError } from 'commander';
import { s3Url } from '../../infra/env';
import { InfraUnavailableError } from '../../infra/errors';
import { InvalidKeyPartError, type RunSpec, type SweepSpec, validateRunId } from '../contract';
import { ObjectNotFoundError } from '../storage/errors';
import { runKey, sweepKey } from '../storage/keys';
import type { ObjectStore } from '../storage/object_store';
import { BadInputError, isUnreachable } from './exit_codes';

/**
 * Commander parser of a `<runId>` argument, so a bad id is a usage error (exit 2) before any server
 * is contacted. @returns the id unchanged. @throws InvalidArgumentError with validateRunId's message
 */
export function runIdArgument(value: string): string {
  try {
    return validateRunId(value);
  } catch (err) {
    if (err instanceof InvalidKeyPartError) throw new InvalidArgumentError(err.message);
    throw err;
  }
}

/**
 * The run spec of `runId`.
 * @throws InvalidKeyPartError (exit 2) for an invalid run id; BadInputError (exit 2) for an unknown
 *   one: `run "x" not found: no runs/x/run.json in bucket starpo (see \`starpo list\`)`;
 *   InfraUnavailableError (exit 3) naming the S3 server and the remedy when it does not answer;
 *   other errors of the store as they are
 */
export async function loadRunSpec(store: ObjectStore, runId: string): Promise<RunSpec> {
  const key = runKey(runId);
  try {
    return await store.getJson<RunSpec>(key);
  } catch (err) {
    if (err instanceof ObjectNotFoundError)
      throw new BadInputError(`run ${JSON.stringify(runId)} not found: no ${key} in bucket ${store.bucket} (see \`starpo list\`)`);
    throw unreachableOr(store, err);
  }
}

/** `err` as the one-line exit-3 error when the S3 server did not answer, else unchanged. */
function unreachableOr(store: ObjectStore, err: unknown): unknown {
  if (!isUnreachable(err)) return err;
  return new InfraUnavailableError(
    `cannot reach the S3 server at ${s3Url(store.endpoint)} (${(err as Error).message}); start the local servers with \`starpo infra up\` or set S3_ENDPOINT`,
    { hint: false },
  );
}

/** Whether `id` names a sweep (sweeps/<id>/sweep.json exists). @throws InfraUnavailableError (exit 3) when S3 does not answer */
export async function isStoredSweep(store: ObjectStore, id: string): Promise<boolean> {
  try {
    return await store.exists(sweepKey(id));
  } catch (err) {
    throw unreachableOr(store, err);
  }
}

/**
 * The definition of sweep `sweepId`.
 * @throws BadInputError (exit 2) when sweeps/<id>/sweep.json does not exist; InfraUnavailableError (exit 3) as loadRunSpec
 */
export async function loadSweepSpec(store: ObjectStore, sweepId: string): Promise<SweepSpec> {
  const key = sweepKey(sweepId);
  try {
    return await store.getJson<SweepSpec>(key);
  } catch (err) {
    if (err instanceof ObjectNotFoundError)
      throw new BadInputError(`sweep ${JSON.stringify(sweepId)} not found: no ${key} in bucket ${store.bucket}`);
    throw unreachableOr(store, err);
  }
}
