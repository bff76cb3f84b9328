/**
 * Env registry: env_type (ROLL/RAGEN names, SPEC.md §2 custom_envs.<tag>.env_type) -> constructor.
 */
import { BanditEnv } from './bandit';
import { ChaosEnv } from './chaos';
import type { RawEnvConfig } from './config';
import { CountdownEnv } from './countdown';
import { FrozenLakeEnv } from './frozen_lake';
import { SokobanEnv } from './sokoban';
import type { Env, EnvOptions } from './env';

const FACTORIES: Record<string, (config: RawEnvConfig, options: EnvOptions) => Env> = {
  frozen_lake: (config, options) => new FrozenLakeEnv(config, options),
  bandit: (config, options) => new BanditEnv(config, options),
  chaos: (config, options) => new ChaosEnv(config, options), // fault injection for tests (chaos.ts)
  countdown: (config, options) => new CountdownEnv(config, options),
  sokoban: (config, options) => new SokobanEnv(config, options),
};

/** Known env_type values. */
export const ENV_TYPES: readonly string[] = Object.keys(FACTORIES);

/**
 * Creates an env.
 * @param envType one of ENV_TYPES
 * @param envConfig custom_envs.<tag>.env_config from YAML (undefined = defaults)
 * @param options per-instance options from the rollout manager (envId, enableThink; see EnvOptions)
 * @throws Error for an unknown env_type (lists the allowed ones), an unknown env_config key or a bad value
 *         (names the key, the value and what is allowed), or a bad envId.
 */
export function createEnv(envType: string, envConfig?: Record<string, unknown>, options: EnvOptions = {}): Env {
  const factory = Object.prototype.hasOwnProperty.call(FACTORIES, envType) ? FACTORIES[envType] : undefined;
  if (factory === undefined) {
    throw new Error(`env_type "${envType}" is not known; allowed: ${ENV_TYPES.join(', ')}`);
  }
  if (options.envId !== undefined && (!Number.isSafeInteger(options.envId) || options.envId < 0)) {
    throw new Error(`createEnv: envId must be a non-negative integer, got ${String(options.envId)}`);
  }
  return factory(envConfig, options);
}

/**
 * Validates an env_config without keeping the env (for config validation before anything starts):
 * creates the env and resets it once (seed 0), so a config that cannot produce a start state (e.g. a
 * Sokoban room too small for its boxes) fails at `config check` instead of having every group of its
 * tag dropped at run time. The `chaos` env is only created: its faults are the point.
 * @throws the errors of createEnv, and whatever reset(0) throws
 */
export function validateEnvConfig(envType: string, envConfig?: Record<string, unknown>): void {
  const env = createEnv(envType, envConfig);
  if (envType !== 'chaos') env.reset(0);
}
