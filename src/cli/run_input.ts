/**
 * Builds the workflow input (run.json) from a YAML config: the `starpo run-json` command and the
 * first half of `starpo train`.
 */
import { basename, extname } from 'node:path';
import { loadConfigFile, type LoadedConfig } from '../config/load';
import { ConfigError } from '../config/errors';
import type { StarpoRunInput } from '../activities/types';

/** A run id from the config name and the UTC time, e.g. frozen_lake-20261129-201500. */
export function newRunId(configName: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${configName}-${stamp}`;
}

/**
 * Loads and validates a config file (Hydra-style `overrides` applied) and returns the workflow input
 * with what the file had that is accepted but unused (see acceptedNotes).
 * @throws ConfigError (exit code 2) for a missing file, bad YAML, a bad override or a bad key
 */
export function runInputFromFile(path: string, runId?: string, overrides: readonly string[] = []): { input: StarpoRunInput } & Omit<LoadedConfig, 'config'> {
  const { config, ...accepted } = loadConfigFile(path, overrides);
  const configName = basename(path, extname(path));
  const id = runId ?? newRunId(configName);
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(id)) {
    throw new ConfigError('--run-id', [`${JSON.stringify(id)}: allowed are 1-128 characters of A-Z a-z 0-9 . _ -`]);
  }
  return { input: { runId: id, configName, config }, ...accepted };
}
