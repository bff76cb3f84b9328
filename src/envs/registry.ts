/**
 * Env registry: env_type (ROLL/RAGEN names, docs/configs.md custom_envs.<tag>.env_type) -> constructor, and
 * the one place that knows which env types run in process and which talk to a server.
 */
import { BanditEnv } from './bandit';
import type { RawEnvConfig } from './config';
import { CountdownEnv } from './countdown';
import type { Env, EnvOptions, SyncEnv } from './env';
import { FrozenLakeEnv } from './frozen_lake';
import { parseOpenEnvConfig } from './openenv/config';
import { checkOpenEnvServers, OpenEnvEnv, startOpenEnvServer } from './openenv/env';
import { SokobanEnv } from './sokoban';

type Factory = (config: RawEnvConfig, options: EnvOptions) => Env;

/**
 * How an env type is made. Remote env types only: `checkServers` validates the env_config and asks every
 * server it names whether it answers, rejecting with one line per server that does not (its envs' reset and
 * step return promises, so config validation creates them but does not reset them); `startServers` starts
 * the servers the env_config has this process run, and waits until they answer.
 */
interface EnvTypeEntry {
  create: Factory;
  checkServers?: (config: RawEnvConfig) => Promise<void>;
  startServers?: (config: RawEnvConfig) => Promise<void>;
}

const ENTRIES: Record<string, EnvTypeEntry> = {
  frozen_lake: { create: (config, options) => new FrozenLakeEnv(config, options) },
  bandit: { create: (config, options) => new BanditEnv(config, options) },
  countdown: { create: (config, options) => new CountdownEnv(config, options) },
  sokoban: { create: (config, options) => new SokobanEnv(config, options) },
  openenv: {
    create: (config, options) => new OpenEnvEnv(config, options),
    checkServers: (config) => checkOpenEnvServers(parseOpenEnvConfig(config)),
    startServers: (config) => startOpenEnvServer(parseOpenEnvConfig(config)),
  },
};

/**
 * The env class of each env type, so `createEnv('frozen_lake')` is typed as the synchronous FrozenLakeEnv.
 * A test or plugin that registers a type may add it here by declaration merging.
 */
export interface EnvClasses {
  frozen_lake: FrozenLakeEnv;
  bandit: BanditEnv;
  countdown: CountdownEnv;
  sokoban: SokobanEnv;
  openenv: OpenEnvEnv;
}

/** Known env_type values (the built-in ones, then those added with registerEnvType). */
export const ENV_TYPES: readonly string[] = Object.keys(ENTRIES);

/**
 * Adds an env type (e.g. a wrapper env a test or a plugin brings), so configs may name it.
 * @throws Error when the name is taken
 */
export function registerEnvType(envType: string, factory: Factory): void {
  if (Object.hasOwn(ENTRIES, envType)) throw new Error(`env_type "${envType}" is already registered`);
  ENTRIES[envType] = { create: factory };
  (ENV_TYPES as string[]).push(envType);
}

function entryOf(envType: string): EnvTypeEntry {
  const entry = Object.hasOwn(ENTRIES, envType) ? ENTRIES[envType] : undefined;
  if (entry === undefined) throw new Error(`env_type "${envType}" is not known; allowed: ${ENV_TYPES.join(', ')}`);
  return entry;
}

/**
 * Creates an env.
 * @param envType one of ENV_TYPES
 * @param envConfig custom_envs.<tag>.env_config from YAML (undefined = defaults)
 * @param options per-instance options from the rollout manager (envId, enableThink; see EnvOptions)
 * @throws Error for an unknown env_type (lists the allowed ones), an unknown env_config key or a bad value
 *         (names the key, the value and what is allowed), or a bad envId.
 */
export function createEnv<T extends keyof EnvClasses>(envType: T, envConfig?: Record<string, unknown>, options?: EnvOptions): EnvClasses[T];
export function createEnv(envType: string, envConfig?: Record<string, unknown>, options?: EnvOptions): Env;
export function createEnv(envType: string, envConfig?: Record<string, unknown>, options: EnvOptions = {}): Env {
  const entry = entryOf(envType);
  if (options.envId !== undefined && (!Number.isSafeInteger(options.envId) || options.envId < 0)) {
    throw new Error(`createEnv: envId must be a non-negative integer, got ${String(options.envId)}`);
  }
  return entry.create(envConfig, options);
}

/**
 * An env of an in-process env type, whose reset and step return at once; null for an env type that talks to a
 * server (its env_config checked all the same). For code that must reset without a server: config checks, tests.
 * @throws the errors of createEnv
 */
export function createInProcessEnv(envType: string, envConfig?: Record<string, unknown>, options: EnvOptions = {}): SyncEnv | null {
  const env = createEnv(envType, envConfig, options);
  return entryOf(envType).checkServers === undefined ? (env as SyncEnv) : null;
}

/**
 * Validates an env_config without keeping the env (for config validation before anything starts): creates
 * the env and, for an in-process env type, resets it once (seed 0), so a config that cannot produce a start
 * state (e.g. a Sokoban room too small for its boxes) fails at `config check` instead of having every group
 * of its tag dropped at run time. A remote env's servers are checked apart (checkEnvServers).
 * @throws the errors of createEnv, and whatever reset(0) throws
 */
export function validateEnvConfig(envType: string, envConfig?: Record<string, unknown>): void {
  createInProcessEnv(envType, envConfig)?.reset(0);
}

/**
 * Starts the servers an env_config has the process that plays it run (`openenv`'s env_config.command), unless
 * they run already, and waits until they answer; nothing for other env types and configs.
 * @throws Error (rejects) naming the command when its server does not come up
 */
export async function startEnvServers(envType: string, envConfig?: Record<string, unknown>): Promise<void> {
  await entryOf(envType).startServers?.(envConfig);
}

/**
 * Asks the servers an env_config names whether they answer (nothing for in-process env types).
 * @throws Error (rejects) with one line per server that does not answer; an unknown env_type or a bad env_config throws as createEnv
 */
export async function checkEnvServers(envType: string, envConfig?: Record<string, unknown>): Promise<void> {
  await entryOf(envType).checkServers?.(envConfig);
}
