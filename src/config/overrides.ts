/**
 * Hydra command-line overrides (Hydra docs, "Override grammar"), applied after the defaults merge
 * and before interpolation: `a.b.c=value` sets a key (creating missing mappings; the schema then
 * reports unknown keys; a mapping value merges into the mapping already there, as in Hydra),
 * `+a.b=value` adds a key that must not exist yet, `++a.b=value` adds or overrides, `~a.b` deletes a
 * key (so its default applies) and `~a.b=value` deletes it only if it holds that value. The value is
 * parsed as YAML (`7`, `true`, `null`, `[a, b]`, `{k: 1}`, `${other.key}`); an empty value is the
 * empty string, as in Hydra.
 */
import { ConfigError } from '../contract';
import { clip } from './show';
import { deepMerge, isMapping, type Mapping, ONE_REFERENCE, valueAt } from './tree';
import { parseConfigYaml, YamlInputError } from './yaml_text';

/** The source named by errors that only command-line overrides caused. */
export const COMMAND_LINE = 'command line';

const KEY = '([A-Za-z_][\\w-]*(?:\\.[A-Za-z_0-9][\\w-]*)*)';
const OVERRIDE = new RegExp(`^(\\+\\+|\\+)?${KEY}=(.*)$`, 's');
/** Hydra's delete: `~key`, or `~key=value` (delete only if it holds that value). */
const DELETE = new RegExp(`^(~)${KEY}(?:=(.*))?$`, 's');

/** One parsed `key=value` argument. */
export interface Override {
  /** The argument as given. */
  arg: string;
  /** '' sets a key, `+` adds one that must not exist yet, `++` adds or sets, `~` deletes. */
  prefix: '' | '+' | '++' | '~';
  path: string[];
  /** The value as written (YAML); for `~key` without one, empty. */
  text: string;
  /** The parsed value; for `~key` without one, undefined (delete whatever is there). */
  value: unknown;
}

function parseOverride(arg: string): Override {
  const m = OVERRIDE.exec(arg) ?? DELETE.exec(arg);
  if (!m) throw new ConfigError(COMMAND_LINE, [`\`${arg}\`: expected key=value (Hydra override syntax: a.b=1, +a.b=1, ++a.b=1, ~a.b)`]);
  const [, prefix, key, text] = m;
  // A plain object's prototype slot, not a key: setting it would change what every lookup under it finds.
  if (key.split('.').includes('__proto__')) {
    throw new ConfigError(COMMAND_LINE, [`\`${clip(arg)}\`: \`__proto__\` is not a config key`]);
  }
  let value: unknown = text === undefined ? undefined : '';
  if (text) {
    try {
      value = parseConfigYaml(text);
    } catch (err) {
      if (!(err instanceof YamlInputError)) throw err;
      // One line of text: a line number would say nothing.
      const problem = err.problems.join('; ').replace(/^line \d+: /, '');
      const verb = problem.startsWith('not valid') ? ' is' : problem.startsWith('unknown') ? ' has an' : ':';
      throw new ConfigError(COMMAND_LINE, [`\`${clip(arg)}\`: the value${verb} ${problem}`]);
    }
  }
  return { arg, prefix: (prefix ?? '') as Override['prefix'], path: key.split('.'), text: text ?? '', value };
}

/** The argument `o` would be with another path. */
const argFor = (o: Override, path: readonly string[]) =>
  `${o.prefix}${path.join('.')}${o.prefix === '~' && o.value === undefined ? '' : `=${o.text}`}`;

/** Why `o` cannot set a key under `at`, which holds the non-mapping `child`; an interpolation names the path to override instead. */
function notAMapping(o: Override, at: number, child: unknown): ConfigError {
  const where = o.path.slice(0, at + 1).join('.');
  const ref = typeof child === 'string' ? ONE_REFERENCE.exec(child)?.[1].trim() : undefined;
  const problem =
    ref === undefined
      ? `\`${where}\` is ${JSON.stringify(child)}, not a mapping`
      : `\`${where}\` is the interpolation \`${child as string}\`; override the referenced path instead: ${argFor(o, [ref, ...o.path.slice(at + 1)])}`;
  return new ConfigError(COMMAND_LINE, [`\`${o.arg}\`: ${problem}`]);
}

/** `root` without the key `o` deletes, as Hydra does: the key must be set, and hold `o.value` if one is given. */
function deleteOne(root: Mapping, o: Override): Mapping {
  const key = o.path.join('.');
  // A list element or a key inside an interpolation is not a key of a mapping: refused as setting one is.
  for (let i = 0; i < o.path.length - 1; i++) {
    const child = valueAt(root, o.path.slice(0, i + 1));
    if (child !== undefined && !isMapping(child)) throw notAMapping(o, i, child);
  }
  const there = valueAt(root, o.path);
  if (there === undefined) throw new ConfigError(COMMAND_LINE, [`\`${clip(o.arg)}\`: \`${key}\` is not set; nothing to delete`]);
  if (o.value !== undefined && JSON.stringify(there) !== JSON.stringify(o.value)) {
    throw new ConfigError(COMMAND_LINE, [
      `\`${clip(o.arg)}\`: \`${key}\` is ${clip(JSON.stringify(there))}, not ${clip(JSON.stringify(o.value))}; nothing deleted (use ~${key} to delete any value)`,
    ]);
  }
  const out: Mapping = { ...root };
  let node = out;
  for (const k of o.path.slice(0, -1)) node = node[k] = { ...(node[k] as Mapping) };
  delete node[o.path[o.path.length - 1]];
  return out;
}

/** `root` with one override applied; mappings along the path are copied, never modified. */
function applyOne(root: Mapping, o: Override): Mapping {
  if (o.prefix === '~') return deleteOne(root, o);
  const out: Mapping = { ...root };
  let node = out;
  for (let i = 0; i < o.path.length - 1; i++) {
    const key = o.path[i];
    const child = Object.hasOwn(node, key) ? node[key] : undefined;
    if (child !== undefined && !isMapping(child)) throw notAMapping(o, i, child);
    node = node[key] = { ...(child ?? {}) };
  }
  const last = o.path[o.path.length - 1];
  if (o.prefix === '+' && Object.hasOwn(node, last)) {
    const key = o.path.join('.');
    throw new ConfigError(COMMAND_LINE, [
      `\`${o.arg}\`: \`${key}\` is already set (to ${JSON.stringify(node[last])}); use ${key}=${o.text} or ++${key}=${o.text} to override it`,
    ]);
  }
  // Hydra applies an override with OmegaConf.update(..., merge=True): a mapping merges into the mapping there.
  const there = Object.hasOwn(node, last) ? node[last] : undefined;
  node[last] = isMapping(o.value) && isMapping(there) ? deepMerge(there, o.value) : o.value;
  return out;
}

/**
 * Parses Hydra-style override arguments (see the file comment).
 * @throws ConfigError (source "command line") naming the argument: no `=`, a bad key, a value that is not YAML
 */
export function parseOverrides(args: readonly string[]): Override[] {
  return args.map(parseOverride);
}

/**
 * Applies parsed overrides in order; the input tree is not modified.
 * @throws ConfigError (source "command line") naming the argument: `+key` for a key that is already set,
 *         a path through a non-mapping (through an interpolation: naming the referenced path to override)
 */
export function applyOverrides(root: Mapping, overrides: readonly Override[]): Mapping {
  return overrides.reduce(applyOne, root);
}
