/**
 * What `starpo eval <runId|checkpoint> [--step N] [--config FILE] [--episodes N]` evaluates: the run,
 * the checkpoint (a manifest key, `--step N`, or the run's latest complete one), the validation
 * config and the evaluation's name, all checked against the object store before anything starts.
 */
import { basename, extname } from 'node:path';
import type { EvalRequest, ObjectRef, RunConfig } from '../contract';
import { InvalidKeyPartError, validateRunId } from '../contract';
import { loadConfigFile } from '../preflight/load';
import { withValEpisodes } from '../rollout/plan';
import { parseStep, stepName } from '../storage/keys';
import { type ObjectStore, sha256Hex } from '../storage/object_store';
import { BadInputError } from './exit_codes';
import { loadRunSpec } from './known_run';
import { pickCheckpoint } from './pick_checkpoint';

/** A checkpoint manifest key of a run's training step. */
const CHECKPOINT_KEY = /^runs\/([^/]+)\/checkpoints\/(step-\d{6})\/manifest\.json$/;

/** The command's arguments. */
export interface EvalArgs {
  /** A run id or a checkpoint manifest key (runs/<run>/checkpoints/step-N/manifest.json). */
  target: string;
  /** Checkpoint step of the run (only with a run id); default the latest complete checkpoint. */
  step?: number;
  /** A config file whose validation settings replace the run's. */
  config?: string;
  /** Validation episodes (val_batch_size), a multiple of val_env_manager.group_size. */
  episodes?: number;
}

/** A resolved evaluation: the workflow input and the config it plays. */
export interface EvalTarget {
  request: EvalRequest;
  configName: string;
  /** The config played (val_batch_size = the episodes). */
  config: RunConfig;
}

/** The run and checkpoint a target names; `label` names the checkpoint in messages (the key given, or `--step N`). */
export interface ParsedTarget {
  runId: string;
  step?: number;
  label: string;
}

/**
 * Run id and step named by the target, checked without any server (so bad input exits 2 before
 * servers or workers start). @throws BadInputError for a malformed target or --step with a key
 */
export function parseTarget(args: EvalArgs): ParsedTarget {
  const key = CHECKPOINT_KEY.exec(args.target);
  if (key) {
    if (args.step !== undefined)
      throw new BadInputError(
        `--step ${args.step}: ${args.target} already names a checkpoint; give either a run id with --step or a checkpoint key alone`,
      );
    return { runId: validateRunId(key[1]), step: parseStep(key[2]) ?? undefined, label: args.target };
  }
  try {
    return {
      runId: validateRunId(args.target),
      step: args.step,
      label: args.step === undefined ? 'latest checkpoint' : `--step ${args.step}`,
    };
  } catch (err) {
    if (!(err instanceof InvalidKeyPartError)) throw err;
    throw new BadInputError(
      `${args.target}: not a run id or a checkpoint key; allowed: a run id (see starpo list) or runs/<runId>/checkpoints/step-NNNNNN/manifest.json`,
    );
  }
}

/**
 * Name of an evaluation folder: `<step-N>-<config>-<episodes>ep-<8 hex>`, the hex from the sha256 of
 * the played config and the checkpoint, so the same evaluation gets the same name (its stored shards
 * are reused) and a changed config a new one.
 */
export function evalName(step: number, configName: string, config: RunConfig, checkpoint: ObjectRef): string {
  const hash = sha256Hex(new TextEncoder().encode(JSON.stringify({ config, checkpoint: checkpoint.sha256 }))).slice(0, 8);
  return `${stepName(step)}-${configName.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64)}-${config.val_batch_size}ep-${hash}`;
}

/**
 * Resolves the command's arguments against the store.
 * @throws BadInputError or ConfigError (exit 2): a malformed target, an unknown run, a missing step,
 *   a bad config file, episodes that are not a multiple of the val group_size; InfraUnavailableError
 *   (exit 3) when the S3 server does not answer
 */
export async function resolveEvalTarget(store: ObjectStore, args: EvalArgs, log: (line: string) => void): Promise<EvalTarget> {
  const target = parseTarget(args);
  const { runId } = target;
  const run = await loadRunSpec(store, runId);
  const other =
    args.config === undefined
      ? undefined
      : { configName: basename(args.config, extname(args.config)), config: loadConfigFile(args.config).config };
  const { configName, config: base } = other ?? run;
  const config = args.episodes === undefined ? base : withValEpisodes(base, args.episodes);
  const checkpoint = await pickCheckpoint(store, runId, target.step, target.label, log);
  const request: EvalRequest = {
    runId,
    name: evalName(checkpoint.step, configName, config, checkpoint.ref),
    checkpoint: checkpoint.ref,
    step: checkpoint.step,
    ...(other ? { config: other } : {}),
    ...(args.episodes === undefined ? {} : { episodes: args.episodes }),
  };
  return { request, configName, config };
}
