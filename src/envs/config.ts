/**
 * Validation helpers for `custom_envs.<tag>.env_config` (docs/configs.md): every error names the key, the
 * value and what is allowed. Used by each env's config parser.
 */

import { show } from '../config/show';
import { EnvConfigError, nearestKey } from '../contract';

/** A raw env_config object as read from YAML (may be undefined = all defaults). */
export type RawEnvConfig = Record<string, unknown> | undefined;

/** ' (did you mean "x"?)' when a close key exists. */
function hint(key: string, allowed: readonly string[]): string {
  const near = nearestKey(key, allowed);
  return near ? ` (did you mean "${near}"?)` : '';
}

/**
 * Throws EnvConfigError when `raw` is not a plain object or has a key outside `allowed`.
 * @param where e.g. "env_config of frozen_lake"
 */
export function checkKeys(where: string, raw: RawEnvConfig, allowed: readonly string[]): Record<string, unknown> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new EnvConfigError(undefined, `${where}: must be a mapping of keys to values, got ${show(raw)}`);
  }
  for (const key of Object.keys(raw)) {
    if (!allowed.includes(key)) {
      throw new EnvConfigError(key, `${where}: unknown key "${key}"${hint(key, allowed)}; allowed keys: ${allowed.join(', ')}`);
    }
  }
  return raw;
}

/** A finite number in [lo, hi] (bounds inclusive unless `openLo`). Throws EnvConfigError naming key and value. */
export function getNumber(
  where: string,
  raw: Record<string, unknown>,
  key: string,
  dflt: number,
  lo = -Infinity,
  hi = Infinity,
  openLo = false,
): number {
  const v = raw[key];
  if (v === undefined) return dflt;
  const ok = typeof v === 'number' && Number.isFinite(v) && (openLo ? v > lo : v >= lo) && v <= hi;
  if (!ok) {
    const range = lo === -Infinity && hi === Infinity ? '' : ` in ${openLo ? '(' : '['}${lo}, ${hi}]`;
    throw new EnvConfigError(key, `${where}: ${key} must be a finite number${range}, got ${show(v)}`);
  }
  return v as number;
}

/** A list of exactly `dflt.length` finite numbers. Throws EnvConfigError naming key and value. */
export function getNumbers(where: string, raw: Record<string, unknown>, key: string, dflt: readonly number[]): number[] {
  const v = raw[key];
  if (v === undefined) return [...dflt];
  if (!Array.isArray(v) || v.length !== dflt.length || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) {
    throw new EnvConfigError(key, `${where}: ${key} must be a list of ${dflt.length} finite numbers, got ${show(v)}`);
  }
  return v as number[];
}

/** An integer in [lo, hi]. Throws EnvConfigError naming key and value. */
export function getInt(where: string, raw: Record<string, unknown>, key: string, dflt: number, lo: number, hi: number): number {
  const v = raw[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) {
    throw new EnvConfigError(key, `${where}: ${key} must be an integer in [${lo}, ${hi}], got ${show(v)}`);
  }
  return v;
}

/** A boolean. Throws EnvConfigError naming key and value. */
export function getBool(where: string, raw: Record<string, unknown>, key: string, dflt: boolean): boolean {
  const v = raw[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') throw new EnvConfigError(key, `${where}: ${key} must be true or false, got ${show(v)}`);
  return v;
}

/** A non-empty string (optionally matching `pattern`, described by `what`). Throws EnvConfigError naming key and value. */
export function getString(where: string, raw: Record<string, unknown>, key: string, dflt: string, pattern?: RegExp, what?: string): string {
  const v = raw[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'string' || v.length === 0 || (pattern !== undefined && !pattern.test(v))) {
    throw new EnvConfigError(key, `${where}: ${key} must be ${what ?? 'a non-empty string'}, got ${show(v)}`);
  }
  return v;
}

/**
 * A regular expression given as a string (ROLL's env_config `action_pattern`), checked to compile.
 * Throws EnvConfigError naming key and value.
 */
export function checkRegex(where: string, raw: Record<string, unknown>, key: string): void {
  const v = raw[key];
  if (v === undefined) return;
  let ok = typeof v === 'string' && v.length > 0;
  if (ok) {
    try {
      new RegExp(v as string);
    } catch {
      ok = false;
    }
  }
  if (!ok) throw new EnvConfigError(key, `${where}: ${key} must be a regular expression, got ${show(v)}`);
}

/** ROLL's `render_mode`: only "text" (the envs render text). Throws EnvConfigError naming key and value. */
export function checkTextRenderMode(where: string, raw: Record<string, unknown>): void {
  getString(where, raw, 'render_mode', 'text', /^text$/, '"text"');
}

/**
 * `env_instruction` (ROLL/RAGEN env_config key): undefined or null = the env's default (returned as
 * null); any string is kept as given ("" = no instruction, as RAGEN's Bandit uses). Throws EnvConfigError naming
 * key and value otherwise.
 */
export function getInstruction(where: string, raw: Record<string, unknown>): string | null {
  const v = raw.env_instruction;
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw new EnvConfigError('env_instruction', `${where}: env_instruction must be a string, got ${show(v)}`);
  return v;
}
