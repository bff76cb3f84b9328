/**
 * Plain config trees as parsed from YAML (mappings, lists, scalars) and the OmegaConf merge rule
 * Hydra composes them with (OmegaConf docs, "Merging configurations").
 */
import { relative } from 'node:path';

/** A YAML mapping. */
export type Mapping = Record<string, unknown>;

/** True for a plain mapping (not null, not a list). */
export function isMapping(v: unknown): v is Mapping {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The value at a dotted path (as a list of keys), or undefined when the path does not exist. */
export function valueAt(root: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let node = root;
  for (const part of path) {
    // Own keys only: `toString` or `constructor` is not a key of a config.
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, part)) return undefined;
    node = (node as Record<PropertyKey, unknown>)[part];
  }
  return node;
}

/** A value that is exactly one `${path}` interpolation (the path in group 1). */
export const ONE_REFERENCE = /^\$\{([^${}:]+)\}$/;

/**
 * Where the value at `path` is written: whole-value `${...}` references along the path followed, as in
 * ROLL's layout (`custom_envs.FrozenLake: ${custom_env.FrozenLake}`, whose keys are `${max_tokens_per_step}`
 * and the like); `path` itself when nothing along it is a reference. A reference cycle stops the walk.
 */
export function writtenPath(root: Mapping, path: readonly string[], seen = new Set<string>()): readonly string[] {
  for (let n = 1; n <= path.length; n++) {
    const v = valueAt(root, path.slice(0, n));
    const ref = typeof v === 'string' ? ONE_REFERENCE.exec(v)?.[1].trim() : undefined;
    if (ref !== undefined && !seen.has(ref)) return writtenPath(root, [...ref.split('.'), ...path.slice(n)], seen.add(ref));
  }
  return path;
}

/**
 * OmegaConf.merge of two trees: mappings merge key by key (recursively), anything else (lists,
 * scalars, interpolation strings) from `over` replaces the value in `base`. Inputs are not modified.
 */
export function deepMerge(base: Mapping, over: Mapping): Mapping {
  const out: Mapping = { ...base };
  for (const [k, v] of Object.entries(over)) {
    out[k] = isMapping(v) && isMapping(out[k]) ? deepMerge(out[k] as Mapping, v) : v;
  }
  return out;
}

/** A file path for messages: relative to the working directory when inside it, else absolute. */
export function displayPath(abs: string): string {
  const rel = relative(process.cwd(), abs);
  return rel === '' || rel.startsWith('..') ? abs : rel;
}
