/**
 * Hydra command-line overrides (Hydra docs, "Override grammar"), applied after the defaults merge
 * and before interpolation: `a.b.c=value` sets a key (creating missing mappings; the schema then
 * reports unknown keys), `+a.b=value` adds a key that must not exist yet, `++a.b=value` adds or
 * overrides. The value is parsed as YAML (`7`, `true`, `null`, `[a, b]`, `{k: 1}`, `${other.key}`);
 * an empty value is the empty string, as in Hydra.
 */
import { parse as parseYaml } from 'yaml';
import { ConfigError } from './errors';
import { isMapping, type Mapping } from './tree';

const OVERRIDE = /^(\+\+|\+)?([A-Za-z_][\w-]*(?:\.[A-Za-z_0-9][\w-]*)*)=(.*)$/s;
const SOURCE = 'command line';

/** One parsed `key=value` argument. */
interface Override {
  arg: string;
  mode: 'set' | 'add' | 'force';
  path: string[];
  value: unknown;
}

function parseOverride(arg: string): Override {
  const m = OVERRIDE.exec(arg);
  if (!m) throw new ConfigError(SOURCE, [`\`${arg}\`: expected key=value (Hydra override syntax: a.b=1, +a.b=1, ++a.b=1)`]);
  const [, prefix, key, text] = m;
  let value: unknown = '';
  if (text !== '') {
    try {
      value = parseYaml(text);
    } catch (err) {
      throw new ConfigError(SOURCE, [`\`${arg}\`: the value is not valid YAML: ${(err as Error).message}`]);
    }
  }
  const mode = prefix === '++' ? 'force' : prefix === '+' ? 'add' : 'set';
  return { arg, mode, path: key.split('.'), value };
}

/** `root` with one override applied; mappings along the path are copied, never modified. */
function applyOne(root: Mapping, o: Override): Mapping {
  const out: Mapping = { ...root };
  let node = out;
  for (let i = 0; i < o.path.length - 1; i++) {
    const key = o.path[i];
    const child = node[key];
    if (child !== undefined && !isMapping(child)) {
      throw new ConfigError(SOURCE, [`\`${o.arg}\`: \`${o.path.slice(0, i + 1).join('.')}\` is ${JSON.stringify(child)}, not a mapping`]);
    }
    node = node[key] = { ...(child ?? {}) };
  }
  const last = o.path[o.path.length - 1];
  if (o.mode === 'add' && node[last] !== undefined) {
    const key = o.path.join('.');
    const rhs = o.arg.slice(o.arg.indexOf('=') + 1);
    throw new ConfigError(SOURCE, [`\`${o.arg}\`: \`${key}\` is already set (to ${JSON.stringify(node[last])}); use ${key}=${rhs} or ++${key}=${rhs} to override it`]);
  }
  node[last] = o.value;
  return out;
}

/**
 * Applies Hydra-style overrides in order; the input tree is not modified.
 * @throws ConfigError (source "command line") naming the argument: no `=`, a bad key, a value that
 *         is not YAML, `+key` for a key that is already set, a path through a non-mapping
 */
export function applyOverrides(root: Mapping, overrides: readonly string[]): Mapping {
  return overrides.map(parseOverride).reduce(applyOne, root);
}
