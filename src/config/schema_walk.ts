/**
 * Walks of the run-config schema (contract/run_config.ts): the schema at a dotted path, and the ROLL keys present in
 * a config that the schema accepts as IGNORED (contract/run_config_blocks.ts), so both stay derived from one schema.
 */
import { z } from 'zod';
import { IGNORED, runConfigSchema } from '../contract';
import { isMapping } from './tree';

/** `schema` without its default / optional / nullable wrappers. */
function unwrap(schema: z.ZodType): z.ZodType {
  let node = schema;
  while (node instanceof z.ZodDefault || node instanceof z.ZodOptional || node instanceof z.ZodNullable) node = node.unwrap() as z.ZodType;
  return node;
}

/**
 * The (unwrapped) schema of the value at a dotted path of the run config: through objects by key and
 * through records (custom_envs) by any key; undefined when the path leaves the schema.
 */
export function schemaAt(path: ReadonlyArray<PropertyKey>): z.ZodType | undefined {
  let node: z.ZodType | undefined = runConfigSchema;
  for (const part of path) {
    if (node instanceof z.ZodObject) node = (node.shape as Record<string, z.ZodType>)[String(part)];
    else if (node instanceof z.ZodRecord) node = node.valueType as z.ZodType;
    else return undefined;
    if (node === undefined || node === IGNORED) return undefined;
    node = unwrap(node);
  }
  return node;
}

/** The keys of an object schema: all of them, or only those starpo uses (not IGNORED). */
export function keysOf(schema: z.ZodObject, which: 'all' | 'used'): string[] {
  return Object.entries(schema.shape as Record<string, z.ZodType>)
    .filter(([, s]) => which === 'all' || s !== IGNORED)
    .map(([k]) => k);
}

function collectIgnored(schema: z.ZodType, value: unknown, path: string[], out: string[]): void {
  if (!isMapping(value)) return;
  if (schema instanceof z.ZodRecord) {
    for (const [k, v] of Object.entries(value)) collectIgnored(unwrap(schema.valueType as z.ZodType), v, [...path, k], out);
    return;
  }
  if (!(schema instanceof z.ZodObject)) return;
  const shape = Object.entries(schema.shape as Record<string, z.ZodType>);
  for (const [k, s] of shape) if (s === IGNORED && value[k] !== undefined) out.push([...path, k].join('.'));
  for (const [k, s] of shape) if (s !== IGNORED) collectIgnored(unwrap(s), value[k], [...path, k], out);
}

/**
 * Dotted paths of the IGNORED keys present in a config (per tag under custom_envs), each block's own
 * keys before those of its nested blocks, in schema order.
 */
export function ignoredKeysIn(raw: unknown): string[] {
  const out: string[] = [];
  collectIgnored(runConfigSchema, raw, [], out);
  return out;
}
