/**
 * The object store key layout, a pure function of (run, step, split, shard) so a retried activity
 * rewrites the same keys (docs/design.md, "The object store"). Key parts follow the contract's rules.
 */
import { InvalidKeyPartError } from '../contract/errors';
import { isKeyName, validateRunId } from '../contract/run';

const SPLIT = /^[a-z][a-z0-9_]{0,31}$/;

/** Zero-padded step folder name, e.g. 10 -> `step-000010`. @throws InvalidKeyPartError unless step is an integer 0..999999. */
export function stepName(step: number): string {
  if (!Number.isInteger(step) || step < 0 || step > 999_999) {
    throw new InvalidKeyPartError(`step ${step} is invalid; allowed: an integer from 0 to 999999`);
  }
  return `step-${String(step).padStart(6, '0')}`;
}

/** Parses `step-000010` (or a key containing `/step-000010/` or `/step-000010.json`) back to 10; null when absent. */
export function parseStep(keyOrName: string): number | null {
  const m = /(?:^|\/)step-(\d{6})(?:\/|\.json$|$)/.exec(keyOrName);
  return m ? Number(m[1]) : null;
}

/** `runs/<runId>/` */
export function runPrefix(runId: string): string {
  return `runs/${validateRunId(runId)}/`;
}

/** `runs/<runId>/run.json`: the resolved RunSpec. */
export function runKey(runId: string): string {
  return `${runPrefix(runId)}run.json`;
}

/** `runs/<runId>/checkpoints/`: parent of every checkpoint of a run (for listing). */
export function checkpointsPrefix(runId: string): string {
  return `${runPrefix(runId)}checkpoints/`;
}

/** `runs/<runId>/checkpoints/step-000010/` */
export function checkpointPrefix(runId: string, step: number): string {
  return `${checkpointsPrefix(runId)}${stepName(step)}/`;
}

/**
 * `runs/<runId>/rollouts/step-000010/train-shard-003.jsonl.gz`; with `evalName` (`starpo eval`) the
 * same layout under the evaluation's folder: `runs/<runId>/evals/<evalName>/rollouts/step-000010/val-shard-000.jsonl.gz`.
 * @param split lower-case name such as `train` or `val` ([a-z][a-z0-9_]*). @param shard integer 0..999.
 * @throws InvalidKeyPartError naming the bad value.
 */
export function rolloutKey(runId: string, step: number, split: string, shard: number, evalName?: string): string {
  return `${rolloutBase(runId, step, split, shard, evalName)}.jsonl.gz`;
}

/**
 * `runs/<runId>/rollouts/step-000010/train-shard-003.json`: the shard's commit record, written after its
 * trajectories (their reference, the policy that played them, the pool's counts), so a retried rollout
 * can reuse a complete shard. Same arguments and errors as rolloutKey.
 */
export function rolloutRecordKey(runId: string, step: number, split: string, shard: number, evalName?: string): string {
  return `${rolloutBase(runId, step, split, shard, evalName)}.json`;
}

/** The shard's key without extension; validates split and shard. */
function rolloutBase(runId: string, step: number, split: string, shard: number, evalName?: string): string {
  if (typeof split !== 'string' || !SPLIT.test(split)) {
    throw new InvalidKeyPartError(`split ${JSON.stringify(split)} is invalid; allowed: lower-case [a-z][a-z0-9_]*, e.g. train or val`);
  }
  if (!Number.isInteger(shard) || shard < 0 || shard > 999) {
    throw new InvalidKeyPartError(`shard ${shard} is invalid; allowed: an integer from 0 to 999`);
  }
  const base = evalName === undefined ? runPrefix(runId) : evalPrefix(runId, evalName);
  return `${base}rollouts/${stepName(step)}/${split}-shard-${String(shard).padStart(3, '0')}`;
}

/** `sweeps/<sweepId>/sweep.json`: a sweep's SweepSpec (the sweep id follows the run-id rule). */
export function sweepKey(sweepId: string): string {
  return `sweeps/${validateRunId(sweepId)}/sweep.json`;
}

/**
 * `runs/<runId>/evals/<evalName>/`: one `starpo eval` of the run (its spec eval.json, rollouts and
 * result.json), apart from the training's rollouts and metrics.
 * @throws InvalidKeyPartError unless evalName is 1-128 chars of [A-Za-z0-9._-] starting with a letter or digit.
 */
export function evalPrefix(runId: string, evalName: string): string {
  if (!isKeyName(evalName)) {
    throw new InvalidKeyPartError(
      `eval name ${JSON.stringify(evalName)} is invalid; allowed: 1-128 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit`,
    );
  }
  return `${runPrefix(runId)}evals/${evalName}/`;
}

/** `runs/<runId>/evals/<evalName>/eval.json`: what the evaluation plays (config, checkpoint, step). */
export function evalSpecKey(runId: string, evalName: string): string {
  return `${evalPrefix(runId, evalName)}eval.json`;
}

/** `runs/<runId>/evals/<evalName>/result.json`: its val/ metrics, written last. */
export function evalResultKey(runId: string, evalName: string): string {
  return `${evalPrefix(runId, evalName)}result.json`;
}

/** `runs/<runId>/metrics/step-000010.json` */
export function metricsKey(runId: string, step: number): string {
  return `${runPrefix(runId)}metrics/${stepName(step)}.json`;
}

/** `runs/<runId>/latest.json`: pointer to the newest complete checkpoint manifest. */
export function latestKey(runId: string): string {
  return `${runPrefix(runId)}latest.json`;
}

/**
 * `runs/<runId>/initial.json`: pointer to the run's step-0 checkpoint (the warm-up, stored under
 * `warmup/`), the last checkpoint a reader can fall back to.
 */
export function initialKey(runId: string): string {
  return `${runPrefix(runId)}initial.json`;
}

/**
 * `warmup/<name>/`: shared artifacts reused across runs, e.g. a warm-up checkpoint named by the hash
 * of what produced it. @throws InvalidKeyPartError unless name is 1-128 chars of [A-Za-z0-9._-].
 */
export function warmupPrefix(name: string): string {
  if (!isKeyName(name)) {
    throw new InvalidKeyPartError(
      `warm-up name ${JSON.stringify(name)} is invalid; allowed: 1-128 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit`,
    );
  }
  return `warmup/${name}/`;
}

/**
 * Name of the per-trajectory scores file (src/contract/trajectory_scores.ts) inside the checkpoint of step
 * N+1: what the update of step N's rollouts did with each trajectory (kept by the filter, normalised
 * score, advantage). Written with the checkpoint's other files, listed with its sha256 in its manifest.
 */
export const TRAJECTORY_SCORES_NAME = 'trajectory_scores.json';

/** Name of the manifest object inside a checkpoint prefix. */
export const MANIFEST_NAME = 'manifest.json';
