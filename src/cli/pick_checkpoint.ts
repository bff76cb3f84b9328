/**
 * The checkpoint a command names (`export --step N`, `generate --run R --step N`, `eval R@N`): one lookup, so
 * every command agrees on which steps exist and says the same thing about one that does not.
 */
import { type CompleteCheckpoint, checkpointSteps, readCheckpoint, readInitial, readLatestComplete } from '../storage/checkpoint';
import { checkpointPrefix, MANIFEST_NAME } from '../storage/keys';
import type { ObjectStore } from '../storage/object_store';
import { BadInputError } from './exit_codes';

/**
 * A run's checkpoint, verified: `step` (0 = the step-0 policy) or, when undefined, the newest complete one.
 * @param label how the user named the step (e.g. `--step 7`), for the error
 * @throws BadInputError naming the step and the steps that hold weights; CorruptObjectError when the chosen
 *   checkpoint does not verify
 */
export async function pickCheckpoint(
  store: ObjectStore,
  runId: string,
  step: number | undefined,
  label: string,
  log: (line: string) => void,
): Promise<CompleteCheckpoint> {
  if (step === undefined) {
    const latest = await readLatestComplete(store, runId, log);
    if (!latest) throw new BadInputError(`${label}: run ${runId} has no complete checkpoint yet`);
    return latest;
  }
  const steps = await checkpointSteps(store, runId);
  if (!steps.includes(step)) {
    // A step whose manifest stays but whose weights went was let go by max_ckpt_to_keep (policy_checkpoint.ts).
    const dropped = step > 0 && (await store.exists(`${checkpointPrefix(runId, step)}${MANIFEST_NAME}`));
    throw new BadInputError(
      `${label}: run ${runId} has no checkpoint at step ${step}${dropped ? ' (max_ckpt_to_keep dropped its weights)' : ''}; allowed: ${steps.join(', ') || 'none (the run has no checkpoint yet)'}`,
    );
  }
  if (step === 0) {
    const initial = await readInitial(store, runId);
    return { ...(await readCheckpoint(store, initial!.manifest)), step: 0 };
  }
  return { ...(await readCheckpoint(store, `${checkpointPrefix(runId, step)}${MANIFEST_NAME}`)), step };
}
