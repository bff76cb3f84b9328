/**
 * Where a value of a loaded config came from, so a problem names the file or the command-line argument
 * that set it: an override (the last one whose path covers the value, or that created the mapping the
 * value is in or deleted a key inside it), else the last file of the defaults list that sets it (or its
 * nearest enclosing key).
 */
import { ConfigError } from '../contract';
import type { Layer } from './hydra';
import { COMMAND_LINE, type Override } from './overrides';
import { clip } from './show';
import { type Mapping, valueAt, writtenPath } from './tree';

/**
 * A config file (display path) or a command-line override argument; `via` is the path the value is
 * written at when the key reaches it through `${...}` references (tree.ts writtenPath).
 */
export type Origin = ({ file: string } | { override: string }) & { via?: string };

/** The origin of the value at a dotted path; undefined when nothing set it (a default, a missing key). */
export type OriginOf = (path: readonly string[]) => Origin | undefined;

/** One problem line and the origin of the value it is about. */
export interface Problem {
  text: string;
  origin?: Origin;
}

const startsWith = (path: readonly string[], prefix: readonly string[]) => prefix.every((p, i) => path[i] === p);

/**
 * The origin finder of a composed config.
 * @param layers the files' own keys in merge order (hydra.ts)
 * @param composed the merged tree before the overrides
 * @param overrides the parsed command-line overrides, in order
 */
export function originFinder(layers: readonly Layer[], composed: Mapping, overrides: readonly Override[]): OriginOf {
  return (path) => {
    const override = [...overrides]
      .reverse()
      // A deletion inside the value changed it too, as an override that created the value's mapping did.
      .find((o) => startsWith(path, o.path) || (startsWith(o.path, path) && (o.prefix === '~' || valueAt(composed, path) === undefined)));
    if (override) return { override: override.arg };
    for (let n = path.length; n > 0; n--) {
      const layer = [...layers].reverse().find((l) => valueAt(l.tree, path.slice(0, n)) !== undefined);
      if (layer) return { file: layer.file };
    }
    return undefined;
  };
}

/**
 * The origin finder for resolved values: a key reached through `${...}` references is found where it is
 * written, named as `via`. Not for interpolation errors, which are about the reference text itself.
 * @param overridden the tree with the overrides applied, before interpolation
 */
export function throughReferences(originOf: OriginOf, overridden: Mapping): OriginOf {
  return (path) => {
    const at = writtenPath(overridden, path);
    const origin = at === path ? undefined : originOf(at);
    return origin ? { ...origin, via: at.join('.') } : originOf(path);
  };
}

/**
 * ` (interpolated from …, from …)` for a problem line: the variable the value is written at, and the file or
 * override that set it unless that is `source` itself; empty when neither applies.
 */
export function fromNote(origin: Origin | undefined, source: string): string {
  if (origin === undefined) return '';
  const from =
    'override' in origin ? `from \`${clip(origin.override)}\` on the ${COMMAND_LINE}` : origin.file === source ? '' : `from ${origin.file}`;
  const notes = [origin.via === undefined ? '' : `interpolated from \`${origin.via}\``, from].filter((n) => n !== '');
  return notes.length === 0 ? '' : ` (${notes.join(', ')})`;
}

/**
 * Problems written as "`a.b.c`: what is wrong" (the cross-key rules), each with the origin of the key it
 * names first and that origin noted after the key, as describeIssues does for single keys.
 */
export function locatedProblems(texts: readonly string[], source: string, originOf?: OriginOf): Problem[] {
  return texts.map((text) => {
    const key = /^`([^`]+)`/.exec(text)?.[1];
    const origin = key && originOf ? originOf(key.split('.')) : undefined;
    return { text: key ? `\`${key}\`${fromNote(origin, source)}${text.slice(key.length + 2)}` : text, origin };
  });
}

/** A ConfigError for `problems` of the config loaded from `source`; its source is the command line when only overrides caused them. */
export function problemsError(source: string, problems: readonly Problem[]): ConfigError {
  const onlyOverrides = problems.length > 0 && problems.every((p) => p.origin !== undefined && 'override' in p.origin);
  return new ConfigError(
    onlyOverrides ? COMMAND_LINE : source,
    problems.map((p) => p.text),
  );
}
