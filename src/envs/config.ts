/**
 * Validation helpers for `custom_envs.<tag>.env_config` (SPEC.md §2): every error names the key, the
 * value and what is allowed. Used by each env's config parser.
 */

/** A raw env_config object as read from YAML (may be undefined = all defaults). */
export type RawEnvConfig = Record<string, unknown> | undefined;

function show(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}

/** Closest allowed key by edit distance, for "did you mean" hints. */
function nearest(key: string, allowed: readonly string[]): string {
  const dist = (a: string, b: string): number => {
    const d: number[] = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
      let prev = d[0];
      d[0] = i;
      for (let j = 1; j <= b.length; j++) {
        const tmp = d[j];
        d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
        prev = tmp;
      }
    }
    return d[b.length];
  };
  return [...allowed].sort((x, y) => dist(key, x) - dist(key, y))[0];
}

/**
 * Throws Error when `raw` is not a plain object or has a key outside `allowed`.
 * @param where e.g. "env_config of frozen_lake"
 */
export function checkKeys(where: string, raw: RawEnvConfig, allowed: readonly string[]): Record<string, unknown> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new Error(`${where}: must be a mapping of keys to values, got ${show(raw)}`);
  }
  for (const key of Object.keys(raw)) {
    if (!allowed.includes(key)) {
      throw new Error(
        `${where}: unknown key "${key}" (did you mean "${nearest(key, allowed)}"?); allowed keys: ${allowed.join(', ')}`,
      );
    }
  }
  return raw;
}

/** A finite number in [lo, hi] (bounds inclusive unless `openLo`). Throws Error naming key and value. */
export function getNumber(
  where: string, raw: Record<string, unknown>, key: string, dflt: number,
  lo = -Infinity, hi = Infinity, openLo = false,
): number {
  const v = raw[key];
  if (v === undefined) return dflt;
  const ok = typeof v === 'number' && Number.isFinite(v) && (openLo ? v > lo : v >= lo) && v <= hi;
  if (!ok) {
    const range = `${openLo ? '(' : '['}${lo}, ${hi}]`;
    throw new Error(`${where}: ${key} must be a finite number in ${range}, got ${show(v)}`);
  }
  return v as number;
}

/** An integer in [lo, hi]. Throws Error naming key and value. */
export function getInt(where: string, raw: Record<string, unknown>, key: string, dflt: number, lo: number, hi: number): number {
  const v = raw[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) {
    throw new Error(`${where}: ${key} must be an integer in [${lo}, ${hi}], got ${show(v)}`);
  }
  return v;
}

/** A boolean. Throws Error naming key and value. */
export function getBool(where: string, raw: Record<string, unknown>, key: string, dflt: boolean): boolean {
  const v = raw[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') throw new Error(`${where}: ${key} must be true or false, got ${show(v)}`);
  return v;
}

/** A non-empty string (optionally matching `pattern`, described by `what`). Throws Error naming key and value. */
export function getString(
  where: string, raw: Record<string, unknown>, key: string, dflt: string, pattern?: RegExp, what?: string,
): string {
  const v = raw[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'string' || v.length === 0 || (pattern !== undefined && !pattern.test(v))) {
    throw new Error(`${where}: ${key} must be ${what ?? 'a non-empty string'}, got ${show(v)}`);
  }
  return v;
}
