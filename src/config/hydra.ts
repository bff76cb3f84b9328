/**
 * Hydra-style config files (Hydra docs, "The Defaults List"), as ROLL's example configs use them:
 * a top-level `defaults:` list pulls in other YAML files and merges them into the root.
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError } from '../contract';
import { show } from './show';
import { deepMerge, displayPath, isMapping, type Mapping } from './tree';
import { parseConfigYaml, readConfigText, YamlInputError } from './yaml_text';

/** One file's own keys (without `defaults`). */
export interface Layer {
  /** Display path of the file. */
  file: string;
  tree: Mapping;
}

/** A composed file: the merged tree and the layers it was merged from. */
export interface ComposedConfig {
  tree: Mapping;
  /** Every file's own keys in merge order (a later layer overrides an earlier one). */
  layers: Layer[];
}

/** Reads a YAML file whose top level is a mapping (an empty file is `{}`), within yaml_text.ts's bounds. */
function readYamlMapping(file: string): Mapping {
  const shown = displayPath(file);
  let raw: unknown;
  try {
    raw = parseConfigYaml(readConfigText(file)) ?? {};
  } catch (err) {
    if (err instanceof YamlInputError) throw new ConfigError(shown, err.problems);
    throw err;
  }
  if (!isMapping(raw)) throw new ConfigError(shown, [`the top level must be a mapping of config keys, got ${show(raw)}`]);
  return raw;
}

/**
 * The files of a defaults list in merge order, with 'self' where the file's own keys go. Entries:
 * `- ../config/traj_envs@_here_` (a path relative to the directory of the file holding the list,
 * `.yaml` appended when missing, `@_here_` = merge into the root), the same without `@_here_` (also
 * merged into the root), and `_self_`. Without `_self_` the file's own keys come last and override
 * the included ones (Hydra 1.1+).
 */
function defaultsOrder(file: string, list: unknown): Array<string | 'self'> {
  const shown = displayPath(file);
  if (list === undefined) return ['self'];
  if (!Array.isArray(list)) throw new ConfigError(shown, [`\`defaults\`: must be a list of files, got ${JSON.stringify(list)}`]);
  const order = list.map((entry, i): string | 'self' => {
    const problem = (msg: string) => new ConfigError(shown, [`\`defaults[${i}]\`: ${JSON.stringify(entry)}: ${msg}`]);
    if (typeof entry !== 'string') throw problem('only file entries are supported (`path`, `path@_here_`, `_self_`)');
    if (entry === '_self_') return 'self';
    const [path, pkg, ...rest] = entry.split('@');
    if (rest.length > 0 || (pkg !== undefined && pkg !== '_here_') || path.trim() === '') {
      throw problem('expected `path` or `path@_here_` (other packages are not supported)');
    }
    const target = resolve(dirname(file), /\.ya?ml$/.test(path) ? path : `${path}.yaml`);
    if (!existsSync(target)) throw problem(`no such file ${displayPath(target)}`);
    return target;
  });
  return order.includes('self') ? order : [...order, 'self'];
}

/** Composes one file: its defaults (recursively) and its own keys, in defaults-list order. */
function compose(file: string, stack: readonly string[]): ComposedConfig {
  if (stack.includes(file)) {
    const chain = [...stack.slice(stack.indexOf(file)), file].map(displayPath);
    throw new ConfigError(displayPath(stack[stack.length - 1]), [`defaults cycle: ${chain.join(' -> ')}`]);
  }
  const { defaults, ...own } = readYamlMapping(file);
  let tree: Mapping = {};
  const layers: Layer[] = [];
  for (const entry of defaultsOrder(file, defaults)) {
    const part = entry === 'self' ? { tree: own, layers: [{ file: displayPath(file), tree: own }] } : compose(entry, [...stack, file]);
    tree = deepMerge(tree, part.tree);
    layers.push(...part.layers);
  }
  return { tree, layers };
}

/**
 * Reads a config file and its defaults list into one merged tree. Included files may have their own
 * defaults (recursively); a cycle is an error. Merging follows OmegaConf (tree.ts).
 * @returns the tree (without `defaults`) and each file's own keys in merge order
 * @throws ConfigError naming the file and key: unreadable or non-YAML file, a defaults entry that is
 *         not a file (with the resolved path when missing) or has another package, a defaults cycle
 */
export function composeFile(path: string): ComposedConfig {
  return compose(resolve(path), []);
}
