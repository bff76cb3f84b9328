/**
 * Env registry: env_type (ROLL/RAGEN names, docs/configs.md custom_envs.<tag>.env_type) -> constructor.
 */
import { BanditEnv } from './bandit';
import type { RawEnvConfig } from './config';
import { CountdownEnv } from './countdown';
import type { Env, EnvOptions } from './env';
import { FrozenLakeEnv } from './frozen_lake';
import { SokobanEnv } from './sokoban';

const FACTORIES: Record<string, (config: RawEnvConfig, options: EnvOptions) => Env> = {
  frozen_lake: (config, options) => new FrozenLakeEnv(config, options),
  bandit: (config, options) => new BanditEnv(config, options),
  countdown: (config, options) => new CountdownEnv(config, options),
  sokoban: (config, options) => new SokobanEnv(config, options),
};

/** Known env_type values (the built-in ones, then those added with registerEnvType). */
export const ENV_TYPES: readonly string[] = Object.keys(FACTORIES);

/**
 * Adds an env type (e.g. a wrapper env a test or a plugin brings), so configs may name it.
 * @throws Error when the name is taken
 */
export function registerEnvType(envType: string, factory: (config: RawEnvConfig, options: EnvOptions) => Env): void {
  if (Object.hasOwn(FACTORIES, envType)) throw new Error(`env_type "${envType}" is already registered`);
  FACTORIES[envType] = factory;
  (ENV_TYPES as string[]).push(envType);
}

/**
 * Creates an env.
 * @param envType one of ENV_TYPES
 * @param envConfig custom_envs.<tag>.env_config from YAML (undefined = defaults)
 * @param options per-instance options from the rollout manager (envId, enableThink; see EnvOptions)
 * @throws Error for an unknown env_type (lists the allowed ones), an unknown env_config key or a bad value
 *         (names the key, the value and what is allowed), or a bad envId.
 */
export function createEnv(envType: string, envConfig?: Record<string, unknown>, options: EnvOptions = {}): Env {
  const factory = Object.hasOwn(FACTORIES, envType) ? FACTORIES[envType] : undefined;
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
 * tag dropped at run time.
 * @throws the errors of createEnv, and whatever reset(0) throws
 */
export function validateEnvConfig(envType: string, envConfig?: Record<string, unknown>): void {
  createEnv(envType, envConfig).reset(0);
}
