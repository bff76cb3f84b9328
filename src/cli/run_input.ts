/**
 * Builds the workflow input (run.json) from a YAML config: the `starpo run-json` command and the
 * first half of `starpo train`.
 */
import { basename, extname } from 'node:path';
import { ConfigError, InvalidKeyPartError, type RunSpec, validateRunId } from '../contract';
import { type LoadedConfig, loadConfigFile } from '../preflight/load';

/**
 * A run id from the config name and the UTC time, e.g. frozen_lake-20261129-201500. A file name the run-id
 * rule refuses is made to fit (other characters become `_`, at most 64 of them), so any config file can run
 * without --run-id.
 */
export function newRunId(configName: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const name = configName
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/\.{2,}/g, '.')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 64);
  return `${name || 'run'}-${stamp}`;
}

/**
 * Loads and validates a config file (Hydra-style `overrides` applied) and returns the workflow input
 * with what the file had that is accepted but unused (see acceptedNotes).
 * @throws ConfigError (exit code 2) for a missing file, bad YAML, a bad override, a bad key or a run id
 *   the store would refuse (the contract's run-id rule)
 */
export function runInputFromFile(
  path: string,
  runId?: string,
  overrides: readonly string[] = [],
): { input: RunSpec } & Omit<LoadedConfig, 'config'> {
  const { config, ...accepted } = loadConfigFile(path, overrides);
  const configName = basename(path, extname(path));
  const id = runId ?? newRunId(configName);
  try {
    validateRunId(id);
  } catch (err) {
    if (err instanceof InvalidKeyPartError) throw new ConfigError('--run-id', [err.message]);
    throw err;
  }
  return { input: { runId: id, configName, config }, ...accepted };
}
