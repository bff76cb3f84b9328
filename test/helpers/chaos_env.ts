/**
 * `chaos`: a fault-injection wrapper env for tests of the env pool (the pool must survive an env that
 * throws or hangs). It plays an inner env unchanged and, in the episodes it picks, throws in reset,
 * throws in a given step, or blocks a given step. Importing this file registers it as env type `chaos`.
 */

import { checkKeys, getBool, getInt, getNumber, getString, type RawEnvConfig } from '../../src/envs/config';
import type { EnvOptions, ResetResult, StepResult, SyncEnv } from '../../src/envs/env';
import { createEnv, createInProcessEnv, ENV_TYPES, registerEnvType } from '../../src/envs/registry';
import { Rng } from '../../src/util/rng';

/**
 * Validated chaos env_config. `inner_env_type` (required) and `inner_env_config` (default {}) name the
 * env played. Faults (all off by default): `throw_on_reset` (reset throws), `throw_on_step` k (the
 * k-th step, 1-based, throws), `hang_on_step` k (the k-th step blocks the thread for `hang_seconds`,
 * default 1, then returns normally). Which episodes are faulty: those whose env id is in `env_ids`
 * (default: every env id; an env made without an id, as config validation makes one, never faults), whose reset seed is in
 * `seeds` (default: any seed), and for which Rng("chaos", seed, envId).next() < `probability`
 * (default 1), so faults are seeded and replayable.
 */
export interface ChaosConfig {
  inner_env_type: string;
  inner_env_config: Record<string, unknown>;
  throw_on_reset: boolean;
  throw_on_step: number | null;
  hang_on_step: number | null;
  hang_seconds: number;
  env_ids: readonly number[] | null;
  seeds: readonly number[] | null;
  probability: number;
}

/** Allowed env_config keys of chaos. */
export const CHAOS_KEYS = [
  'inner_env_type',
  'inner_env_config',
  'throw_on_reset',
  'throw_on_step',
  'hang_on_step',
  'hang_seconds',
  'env_ids',
  'seeds',
  'probability',
] as const;

/** A list of non-negative integers, or null when absent. Throws Error naming key and value. */
function intList(where: string, r: Record<string, unknown>, key: string): readonly number[] | null {
  const v = r[key];
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v) || !v.every((x) => Number.isSafeInteger(x) && x >= 0)) {
    throw new Error(`${where}: ${key} must be a list of non-negative integers, got ${JSON.stringify(v)}`);
  }
  return v as number[];
}

/** A 1-based step number, or null when absent. */
const stepNumber = (where: string, r: Record<string, unknown>, key: string) =>
  r[key] === undefined || r[key] === null ? null : getInt(where, r, key, 1, 1, 1_000_000);

/** Validates a raw env_config (the inner env's config too). Throws Error naming the key and value. */
export function parseChaosConfig(raw: RawEnvConfig): ChaosConfig {
  const where = 'env_config of chaos';
  const r = checkKeys(where, raw, CHAOS_KEYS);
  if (r.inner_env_type === undefined) throw new Error(`${where}: inner_env_type is required (the env type to wrap, e.g. frozen_lake)`);
  const inner = r.inner_env_config ?? {};
  if (typeof inner !== 'object' || Array.isArray(inner))
    throw new Error(`${where}: inner_env_config must be a mapping, got ${JSON.stringify(inner)}`);
  const config: ChaosConfig = {
    inner_env_type: getString(where, r, 'inner_env_type', ''),
    inner_env_config: inner as Record<string, unknown>,
    throw_on_reset: getBool(where, r, 'throw_on_reset', false),
    throw_on_step: stepNumber(where, r, 'throw_on_step'),
    hang_on_step: stepNumber(where, r, 'hang_on_step'),
    hang_seconds: getNumber(where, r, 'hang_seconds', 1, 0, 3600, true),
    env_ids: intList(where, r, 'env_ids'),
    seeds: intList(where, r, 'seeds'),
    probability: getNumber(where, r, 'probability', 1, 0, 1),
  };
  createEnv(config.inner_env_type, config.inner_env_config); // validates the inner env's type and config
  return config;
}

/** Blocks the thread for `seconds` (a stand-in for an env stuck in native code). */
function blockFor(seconds: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, seconds * 1000);
}

/** The inner env, which must run in process (chaos blocks and throws in its calls, it does not await them). */
function innerEnv(config: ChaosConfig, options: EnvOptions): SyncEnv {
  const env = createInProcessEnv(config.inner_env_type, config.inner_env_config, options);
  if (env === null)
    throw new Error(`env_config of chaos: inner_env_type ${config.inner_env_type} talks to a server; chaos wraps in-process envs`);
  return env;
}

/** The chaos env; see ChaosConfig for when it faults. solve() is the inner env's, when it has one. */
export class ChaosEnv implements SyncEnv {
  readonly envType = 'chaos';
  readonly config: ChaosConfig;
  readonly solve?: () => string[] | null;
  private readonly inner: SyncEnv;
  private readonly envId: number | undefined;
  private faulty = false;
  private steps = 0;
  private seed = 0;

  /** @param config raw env_config (validated here; throws Error on a bad key/value) */
  constructor(config: RawEnvConfig = {}, options: EnvOptions = {}) {
    this.config = parseChaosConfig(config);
    this.inner = innerEnv(this.config, options);
    this.envId = options.envId;
    const inner = this.inner;
    if (inner.solve) this.solve = () => inner.solve!();
  }

  get actionNames(): readonly string[] {
    return this.inner.actionNames;
  }

  reset(seed: number): ResetResult {
    const c = this.config;
    const idMatches = this.envId !== undefined && (c.env_ids === null || c.env_ids.includes(this.envId));
    const seedMatches = c.seeds === null || c.seeds.includes(seed);
    this.faulty = idMatches && seedMatches && new Rng('chaos', seed, this.envId ?? -1).next() < c.probability;
    this.steps = 0;
    this.seed = seed;
    if (this.faulty && c.throw_on_reset) throw new Error(this.fault('reset'));
    return this.inner.reset(seed);
  }

  step(responseText: string): StepResult {
    this.steps++;
    if (this.faulty && this.steps === this.config.throw_on_step) throw new Error(this.fault(`step ${this.steps}`));
    if (this.faulty && this.steps === this.config.hang_on_step) blockFor(this.config.hang_seconds);
    return this.inner.step(responseText);
  }

  render(): string {
    return this.inner.render();
  }

  private fault(what: string): string {
    return `chaos: injected failure in ${what} (env id ${this.envId ?? 'none'}, seed ${this.seed})`;
  }
}

declare module '../../src/envs/registry' {
  interface EnvClasses {
    chaos: ChaosEnv;
  }
}

if (!ENV_TYPES.includes('chaos')) registerEnvType('chaos', (config, options) => new ChaosEnv(config, options));
