/**
 * A config file -> validated RunConfig (SPEC.md §2): compose the file with its Hydra `defaults:`
 * list (hydra.ts), apply command-line overrides (overrides.ts), resolve OmegaConf interpolations
 * (interpolate.ts), drop the interpolation variables, then validate with the zod schema (defaults
 * applied) and the cross-key rules (checks.ts). Every problem is reported at once as a ConfigError
 * naming the file, the key, the value and what is allowed.
 */
import { ConfigError } from './errors';
import { crossKeyProblems } from './checks';
import { composeFile } from './hydra';
import { resolveInterpolations } from './interpolate';
import { describeIssues, show } from './issues';
import { applyOverrides } from './overrides';
import { IGNORED_KEYS, RunConfig, runConfigSchema } from './schema';
import { displayPath, isMapping, valueAt, type Mapping } from './tree';
import { resolve } from 'node:path';

/** Top-level keys a defaults file defines only to be interpolated (e.g. ROLL's `custom_env`). */
export interface VariableSource {
  /** The defaults file (display path) that first defines them. */
  file: string;
  keys: string[];
}

/** A loaded config with what was accepted but not used. */
export interface LoadedConfig {
  config: RunConfig;
  /** Dotted paths of IGNORED_KEYS present in the file (per tag for custom_envs). */
  ignored: string[];
  /** Interpolation variables, dropped after resolution, grouped by the file defining them. */
  variables: VariableSource[];
}

/** Dotted paths of IGNORED_KEYS present in a resolved config (`*` expanded to each custom_envs tag). */
export function ignoredKeysIn(raw: unknown): string[] {
  return IGNORED_KEYS.flatMap((pattern) => {
    const [head, tail] = pattern.split('.*.');
    if (tail === undefined) return valueAt(raw, head.split('.')) === undefined ? [] : [pattern];
    const tags = valueAt(raw, head.split('.'));
    if (!isMapping(tags)) return [];
    return Object.keys(tags).filter((tag) => valueAt(tags, [tag, tail]) !== undefined).map((tag) => `${head}.${tag}.${tail}`);
  });
}

/**
 * Validates a parsed config object and applies defaults.
 * @param raw the parsed (and resolved) YAML
 * @param source a name for messages (file path)
 * @throws ConfigError listing every bad key with its value and what is allowed
 */
export function validateConfig(raw: unknown, source = 'config'): RunConfig {
  if (!isMapping(raw)) {
    throw new ConfigError(source, [`the top level must be a mapping of ROLL config keys, got ${show(raw)}`]);
  }
  const parsed = runConfigSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(source, describeIssues(parsed.error, raw));
  const problems = crossKeyProblems(parsed.data);
  if (problems.length > 0) throw new ConfigError(source, problems);
  return parsed.data;
}

/** Splits off the top-level keys that are not schema keys but are defined by a defaults file. */
function splitVariables(tree: Mapping, definedIn: ReadonlyMap<string, readonly string[]>, source: string): { raw: Mapping; variables: VariableSource[] } {
  const raw: Mapping = {};
  const byFile = new Map<string, string[]>();
  for (const [key, value] of Object.entries(tree)) {
    const file = definedIn.get(key)?.find((f) => f !== source);
    if (key in runConfigSchema.shape || file === undefined) raw[key] = value;
    else byFile.set(file, [...(byFile.get(file) ?? []), key]);
  }
  return { raw, variables: [...byFile].map(([file, keys]) => ({ file, keys })) };
}

/**
 * Reads a config file (Hydra defaults and interpolations resolved, overrides applied) and validates it.
 * @param overrides Hydra-style `a.b=value`, `+a.b=value`, `++a.b=value` arguments
 * @throws ConfigError when a file is missing or not YAML, a defaults entry, override or interpolation
 *         is bad, or the resolved config fails validation
 */
export function loadConfigFile(path: string, overrides: readonly string[] = []): LoadedConfig {
  const { tree, definedIn } = composeFile(path);
  const source = displayPath(resolve(path));
  const resolved = resolveInterpolations(applyOverrides(tree, overrides), { source, definedIn });
  const { raw, variables } = splitVariables(resolved, definedIn, source);
  return { config: validateConfig(raw, source), ignored: ignoredKeysIn(raw), variables };
}

/** The lines `config check` and `train` print once: ignored keys and interpolation variables. */
export function acceptedNotes(loaded: Pick<LoadedConfig, 'ignored' | 'variables'>): string[] {
  const notes = loaded.ignored.length > 0 ? [`ignored (accepted for ROLL compatibility, not used): ${loaded.ignored.join(', ')}`] : [];
  return [...notes, ...loaded.variables.map((v) => `interpolation variables from ${v.file}: ${v.keys.join(', ')}`)];
}
