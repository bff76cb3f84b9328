/**
 * zod issues -> one readable line each, naming the key, the value and what is allowed; an unknown
 * key gets the nearest known key at its level (SPEC.md §2: "Unknown keys are an error that names
 * the key and the nearest known one").
 */
import { z } from 'zod';
import { nearestKey } from './errors';
import { runConfigSchema } from './schema';
import { valueAt } from './tree';

/** Follows a dotted path through schema wrappers to the object shape there, if any. */
function knownKeysAt(schema: z.ZodType, path: ReadonlyArray<PropertyKey>): string[] {
  let node: z.ZodType = schema;
  const unwrap = () => {
    for (;;) {
      if (node instanceof z.ZodDefault || node instanceof z.ZodOptional || node instanceof z.ZodNullable) {
        node = node.unwrap() as z.ZodType;
      } else return;
    }
  };
  for (const part of path) {
    unwrap();
    if (node instanceof z.ZodObject) node = (node.shape as Record<string, z.ZodType>)[String(part)];
    else if (node instanceof z.ZodRecord) node = node.valueType as z.ZodType;
    else return [];
    if (!node) return [];
  }
  unwrap();
  return node instanceof z.ZodObject ? Object.keys(node.shape) : [];
}

/** A value for messages. */
export const show = (v: unknown) => (v === undefined ? '(missing)' : JSON.stringify(v));

/** Turns the zod issues of validating `raw` against runConfigSchema into one line each. */
export function describeIssues(error: z.ZodError, raw: unknown): string[] {
  return error.issues.map((issue) => {
    const where = issue.path.map(String).join('.') || '(top level)';
    if (issue.code === 'unrecognized_keys') {
      const known = knownKeysAt(runConfigSchema, issue.path);
      return issue.keys
        .map((key) => {
          const near = nearestKey(key, known);
          const full = [...issue.path.map(String), key].join('.');
          return `unknown key \`${full}\`${near ? `; did you mean \`${near}\`?` : ''} (allowed here: ${known.join(', ')})`;
        })
        .join('\n  - ');
    }
    return `\`${where}\`: ${issue.message} (got ${show(valueAt(raw, issue.path))})`;
  });
}
