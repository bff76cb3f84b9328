/**
 * What the commands of `starpo` share: the output line, the config and overrides help, `--backend`, the rollout
 * worker default, and the parsers of integer options (a bad value is a usage error, exit 2).
 */
import { availableParallelism } from 'node:os';
import { InvalidArgumentError, Option } from 'commander';
import { BACKEND_NAMES, requestedBackend } from '../model/backend_choice';
import { backendArgument } from './backend';

export const log = (line: string) => console.log(line);

export const CONFIG_HELP = 'YAML config with ROLL key names, e.g. configs/frozen_lake_solver.yaml';

export const OVERRIDES_HELP =
  'Hydra-style overrides applied before interpolation: a.b=value, +a.b=value (new key), ++a.b=value, ~a.b (delete: the default applies)';

/**
 * `--backend`: the tfjs backend of the rollout and update workers this command starts. It is passed on as
 * STARPO_BACKEND (which initBackend reads, and spawned workers inherit), so it wins over an inherited value.
 */
export const backendOption = () =>
  new Option(
    '--backend <name>',
    `tfjs backend of the rollout and update workers: ${BACKEND_NAMES.join(', ')} (default: each role's choice on this host, see starpo backend status)`,
  ).argParser(backendArgument);

/**
 * Applies `--backend`, then refuses (before anything starts) a backend that STARPO_BACKEND or the flag names
 * but that cannot be used: an unknown name (exit 2), a native build that is not installed (exit 3).
 */
export function useBackend(name: string | undefined): void {
  if (name !== undefined) process.env.STARPO_BACKEND = name;
  const { requireInstalled, variantOf } = require('../model/native_build') as typeof import('../model/native_build');
  const want = requestedBackend(process.env);
  if (want === 'tensorflow' || want === 'tensorflow-gpu') requireInstalled(variantOf(want));
}

/** One rollout worker per core (rollout shards are independent, CPU-bound processes). */
export const defaultRolloutWorkers = Math.max(1, Math.min(4, availableParallelism()));

/** Parses a positive integer option; a bad value is a usage error (exit 2). */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${JSON.stringify(value)} is not a positive integer`);
  return n;
}
/** Parses a non-negative integer option; a bad value is a usage error (exit 2). */
export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${JSON.stringify(value)} is not a non-negative integer`);
  return n;
}
