/**
 * The tiny FrozenLake test config (test/fixtures/tiny_frozen_lake.yaml) with top-level keys replaced,
 * validated like a user's file: what unit tests train and roll out with.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { RunConfig, Trajectory } from '../../src/contract';
import { charTokenizer } from '../../src/model/tokenizer';
import { validateConfig } from '../../src/preflight/load';
import { formatDemonstrations } from '../../src/rollout/demonstrations';
import { initTestBackend } from './backend';

/** The fixture config with `patch`'s top-level keys replacing the file's. @throws ConfigError on a bad patch. */
export function fixtureConfig(patch: Record<string, unknown> = {}): RunConfig {
  const raw = parse(readFileSync('test/fixtures/tiny_frozen_lake.yaml', 'utf8')) as Record<string, unknown>;
  return validateConfig({ ...raw, ...patch }, 'fixture');
}

/**
 * Format warm-up episodes (uniformly random valid actions, src/rollout/demonstrations.ts) of the fixture
 * config, after initialising the test backend (helpers/backend.ts): real packed trajectories to update on.
 * @param numEpisodes how many (warmup.num_episodes)
 */
export async function fixtureDemos(numEpisodes: number): Promise<Trajectory[]> {
  await initTestBackend();
  return formatDemonstrations(fixtureConfig({ warmup: { type: 'format', num_episodes: numEpisodes } }), charTokenizer());
}
