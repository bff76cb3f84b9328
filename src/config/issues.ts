/**
 * zod issues -> one readable line each, naming the key, the value (and the file or command-line
 * argument that set it) and what is allowed; an unknown key gets the nearest known key at its level
 * (docs/configs.md: "Unknown keys are an error that names the key and the nearest known one"), and the keys
 * allowed at that level are listed once per level.
 */
import { z } from 'zod';
import { nearestKey } from '../contract';
import { fromNote, type OriginOf, type Problem } from './origins';
import { keysOf, schemaAt } from './schema_walk';
import { show } from './show';
import { valueAt } from './tree';

export { clip, show } from './show';

/** What a missing key must hold: the keys of a block, or the expected type. */
function requiredShape(path: readonly PropertyKey[], expected: string): string {
  const schema = schemaAt(path);
  if (schema instanceof z.ZodObject) return `a mapping with ${keysOf(schema, 'used').join(', ')}`;
  const entry = schema instanceof z.ZodRecord ? schemaAt([...path, '*']) : undefined;
  if (entry instanceof z.ZodObject) return `a mapping from each name to a mapping with ${keysOf(entry, 'used').join(', ')}`;
  return `a ${expected === 'array' ? 'list' : expected}`;
}

/**
 * Top-level keys of ROLL's RLVR pipeline that its agentic pipeline (and starpo) reads under another
 * path: a ROLL user's YAML may carry them at the top.
 */
const AGENTIC_PATHS: Record<string, string> = {
  norm_mean_type: 'reward_normalization.norm_mean_type',
  norm_std_type: 'reward_normalization.norm_std_type',
};

/** One line per unknown key of one level; the keys allowed there come once, on the last line. */
function unknownKeys(issue: Extract<z.core.$ZodIssue, { code: 'unrecognized_keys' }>, source: string, originOf?: OriginOf): Problem[] {
  const at = issue.path.map(String);
  const schema = schemaAt(at);
  const known = schema instanceof z.ZodObject ? keysOf(schema, 'all') : [];
  const level = at.length === 0 ? 'at the top level' : `under \`${at.join('.')}\``;
  return issue.keys.map((key, i) => {
    const origin = originOf?.([...at, key]);
    const agentic = at.length === 0 && Object.hasOwn(AGENTIC_PATHS, key) ? AGENTIC_PATHS[key] : undefined;
    const near = agentic ?? nearestKey(key, known);
    const allowed = i === issue.keys.length - 1 ? ` (allowed ${level}: ${known.join(', ')})` : '';
    return {
      text: `unknown key \`${[...at, key].join('.')}\`${fromNote(origin, source)}${near ? `; did you mean \`${near}\`?` : ''}${allowed}`,
      origin,
    };
  });
}

/**
 * A key missing inside a named entry (`custom_envs.<tag>.env_type`) whose entry name is close to one that
 * exists: a misspelled tag in an override makes a new, incomplete entry. Names that entry and its origin.
 */
function misspelledEntry(path: readonly string[], raw: unknown, source: string, originOf?: OriginOf): Problem | undefined {
  for (let i = path.length - 1; i > 0; i--) {
    if (!(schemaAt(path.slice(0, i)) instanceof z.ZodRecord)) continue;
    const entries = valueAt(raw, path.slice(0, i));
    const names = entries && typeof entries === 'object' ? Object.keys(entries).filter((k) => k !== path[i]) : [];
    const near = nearestKey(path[i] as string, names);
    if (!near) return undefined;
    const origin = originOf?.(path.slice(0, i + 1));
    const entry = path.slice(0, i + 1).join('.');
    const text = `\`${entry}\`${fromNote(origin, source)} is a new entry: did you mean \`${[...path.slice(0, i), near].join('.')}\`?`;
    return { text, origin };
  }
  return undefined;
}

/**
 * Turns the zod issues of validating `raw` against runConfigSchema into problem lines.
 * @param source the loaded file (display path): origins other than it are named
 * @param originOf where each value came from (origins.ts); without it no origin is named
 */
export function describeIssues(error: z.ZodError, raw: unknown, source: string, originOf?: OriginOf): Problem[] {
  return error.issues.flatMap((issue): Problem[] => {
    if (issue.code === 'unrecognized_keys') return unknownKeys(issue, source, originOf);
    const path = issue.path.map(String);
    const where = path.join('.') || '(top level)';
    const value = valueAt(raw, path);
    if (issue.code === 'invalid_type' && value === undefined) {
      const text = `\`${where}\` is required (${requiredShape(path, issue.expected)})`;
      const entry = misspelledEntry(path, raw, source, originOf);
      return [entry ? { text: `${text}; ${entry.text}`, origin: entry.origin } : { text }];
    }
    const origin = originOf?.(path);
    return [{ text: `\`${where}\`${fromNote(origin, source)}: ${issue.message} (got ${show(value)})`, origin }];
  });
}
