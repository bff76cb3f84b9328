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
