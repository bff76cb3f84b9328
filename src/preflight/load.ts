/**
 * A config file -> validated RunConfig (docs/configs.md): Hydra defaults, command-line overrides, OmegaConf
 * interpolations, then the zod schema (defaults applied) and the cross-key rules that need the envs and
 * the model (checks.ts). Every problem is reported at once, naming the key, the value, what is allowed
 * and the file or command-line argument that set it.
 */
import { dirname, resolve } from 'node:path';
import { composeFile, type Layer } from '../config/hydra';
import { resolveInterpolations } from '../config/interpolate';
import { describeIssues, show } from '../config/issues';
import { locatedProblems, type OriginOf, originFinder, problemsError, throughReferences } from '../config/origins';
import { applyOverrides, COMMAND_LINE, parseOverrides } from '../config/overrides';
import { ignoredKeysIn } from '../config/schema_walk';
import { displayPath, isMapping, type Mapping } from '../config/tree';
import { configWarnings } from '../config/warnings';
import { ConfigError, nearestKey, type RunConfig, resolveNormTypes, runConfigSchema } from '../contract';
import { TINY_PRESET } from '../model/config';
import { PYPI_MODELS, type PypiModel, pypiModelDir } from '../model/pypi_models';
import type { ChatTokenizer } from '../model/tokenizer';
import { crossKeyProblems } from './checks';
import { firstTurnProblems, replyBudgetWarnings, tokenizerOf } from './first_turn';

/** Interpolation variables: top-level keys that are not config keys, grouped by the file defining them. */
export interface VariableSource {
  /** The file (display path) that first defines them, or "command line" for `+key=value` overrides. */
  file: string;
  keys: string[];
}

/** A loaded config with what was accepted but not used. */
export interface LoadedConfig {
  config: RunConfig;
  /** Dotted paths of the ignored ROLL keys present (schema_walk.ts ignoredKeysIn). */
  ignored: string[];
  /** Interpolation variables some `${...}` refers to, dropped after resolution. */
  variables: VariableSource[];
  /** Variables of an included file that nothing refers to (a shared file defines more than one config uses). */
  unused: VariableSource[];
  /** Settings that load but keep the run from learning (warnings.ts). */
  warnings: string[];
}

/**
 * Validates a parsed config object and applies defaults.
 * @param raw the parsed (and resolved) YAML
 * @param source a name for messages (file path)
 * @param originOf where each value came from (config/origins.ts), named in the messages
 * @throws ConfigError listing every bad key with its value and what is allowed; its source is
 *         "command line" when only overrides caused the problems
 */
export function validateConfig(raw: unknown, source = 'config', originOf?: OriginOf): RunConfig {
  return validated(raw, source, originOf).config;
}

/** validateConfig, with the run's tokenizer it measured the first turn with (loaded once: a model folder's takes a while). */
function validated(raw: unknown, source: string, originOf?: OriginOf): { config: RunConfig; tokenizer: ChatTokenizer } {
  if (!isMapping(raw)) {
    throw new ConfigError(source, [`the top level must be a mapping of ROLL config keys, got ${show(raw)}`]);
  }
  const parsed = runConfigSchema.safeParse(raw);
  if (!parsed.success) throw problemsError(source, describeIssues(parsed.error, raw, source, originOf));
  const problems = crossKeyProblems(parsed.data);
  if (problems.length > 0) throw problemsError(source, locatedProblems(problems, source, originOf));
  // Renders prompts with the run's tokenizer, so only once the envs, tags and pretrain are known good.
  const tokenizer = tokenizerOf(parsed.data);
  const firstTurn = firstTurnProblems(parsed.data, tokenizer);
  if (firstTurn.length > 0) throw problemsError(source, locatedProblems(firstTurn, source, originOf));
  // As ROLL's RewardNormalizationConfig.__post_init__: the types in effect are part of the config.
  const normalization = parsed.data.reward_normalization;
  // As ROLL's ModelArguments.__post_init__: lora_alpha defaults to twice the rank.
  const modelArgs = parsed.data.actor_train.model_args;
  const actorTrain = {
    ...parsed.data.actor_train,
    model_args: { ...modelArgs, lora_alpha: modelArgs.lora_alpha ?? 2 * modelArgs.lora_rank },
  };
  return {
    config: { ...parsed.data, actor_train: actorTrain, reward_normalization: { ...normalization, ...resolveNormTypes(normalization) } },
    tokenizer,
  };
}

/** Keys grouped by the file that first defines each, in first-seen order. */
function byFile(keys: readonly string[], layers: readonly Layer[]): VariableSource[] {
  const groups = new Map<string, string[]>();
  for (const key of keys) {
    const file = layers.find((l) => Object.hasOwn(l.tree, key))?.file ?? COMMAND_LINE;
    groups.set(file, [...(groups.get(file) ?? []), key]);
  }
  return [...groups].map(([file, keys]) => ({ file, keys }));
}

/**
 * Splits off the interpolation variables (OmegaConf: any key may be interpolated): a top-level key that is
 * not a config key is one when some `${...}` refers to it or to a path under it. A key nothing refers to is
 * an unused variable when a file pulled in through `defaults:` defines it (a shared file such as ROLL's
 * traj_envs.yaml defines helpers for many configs; ROLL's loader ignores them) and it is not a near miss
 * of a config key; any other stays in and fails validation as an unknown key with the nearest known key.
 */
function splitVariables(
  tree: Mapping,
  referenced: ReadonlySet<string>,
  layers: readonly Layer[],
  source: string,
): Pick<LoadedConfig, 'variables' | 'unused'> & { raw: Mapping } {
  const configKeys = Object.keys(runConfigSchema.shape);
  const raw: Mapping = {};
  const variables: string[] = [];
  const unused: string[] = [];
  const fromDefaultsFile = (key: string) => layers.some((l) => l.file !== source && Object.hasOwn(l.tree, key));
  for (const [key, value] of Object.entries(tree)) {
    if (configKeys.includes(key)) raw[key] = value;
    else if (referenced.has(key)) variables.push(key);
    else if (fromDefaultsFile(key) && nearestKey(key, configKeys) === undefined) unused.push(key);
    else raw[key] = value;
  }
  return { raw, variables: byFile(variables, layers), unused: byFile(unused, layers) };
}

/**
 * Makes a `pretrain` folder path absolute (in place): relative to the folder of the config file that set
 * it, or to the working directory when a command-line override did (as ROLL resolves local model paths
 * against where it runs, but independent of where `starpo` is started from). `tiny` stays as is; the name of
 * a model `starpo model get` fetches becomes its folder in the cache.
 */
function resolvePretrainPath(raw: Mapping, originOf: OriginOf): void {
  raw.pretrain = modelPath(raw.pretrain, originOf(['pretrain']));
  // ROLL's model_args.model_name_or_path (usually ${pretrain}) names the same model: resolved alike, so the check
  // that it is the run's pretrain compares paths, not spellings.
  const args = isMapping(raw.actor_train) && isMapping(raw.actor_train.model_args) ? raw.actor_train.model_args : null;
  if (args) args.model_name_or_path = modelPath(args.model_name_or_path, originOf(['actor_train', 'model_args', 'model_name_or_path']));
}

/** A model path as resolvePretrainPath resolves it (any other value as it is). */
function modelPath(value: unknown, origin: ReturnType<OriginOf>): unknown {
  if (typeof value !== 'string' || value === TINY_PRESET || value === '') return value;
  if (Object.hasOwn(PYPI_MODELS, value)) return pypiModelDir(PYPI_MODELS[value] as PypiModel);
  return origin && 'file' in origin ? resolve(dirname(resolve(origin.file)), value) : resolve(value);
}

/**
 * Makes `tracker_kwargs.log_dir` absolute (in place), relative to the folder of the config file that set it
 * (or to the working directory for a command-line override), as pretrain: the control worker that writes
 * the event files may run anywhere.
 */
function resolveLogDir(raw: Mapping, originOf: OriginOf): void {
  const kwargs = isMapping(raw.tracker_kwargs) ? raw.tracker_kwargs : null;
  if (!kwargs || typeof kwargs.log_dir !== 'string' || kwargs.log_dir === '') return;
  const origin = originOf(['tracker_kwargs', 'log_dir']);
  kwargs.log_dir = origin && 'file' in origin ? resolve(dirname(resolve(origin.file)), kwargs.log_dir) : resolve(kwargs.log_dir);
}

/**
 * Reads a config file (Hydra defaults and interpolations resolved, overrides applied) and validates it.
 * `pretrain: DIR` comes back as an absolute path (resolvePretrainPath).
 * @param overrides Hydra-style `a.b=value`, `+a.b=value`, `++a.b=value` arguments
 * @throws ConfigError when a file is missing or not YAML, a defaults entry, override or interpolation
 *         is bad, or the resolved config fails validation (an unreferenced non-config key included)
 */
export function loadConfigFile(path: string, overrides: readonly string[] = []): LoadedConfig {
  const { tree, layers } = composeFile(path);
  const source = displayPath(resolve(path));
  const parsed = parseOverrides(overrides);
  const overridden = applyOverrides(tree, parsed);
  // Interpolation errors are about the reference text itself, so they name the key as written; later
  // problems name the variable a key's value came through (throughReferences).
  const literalOrigin = originFinder(layers, tree, parsed);
  const resolved = resolveInterpolations(overridden, { source, originOf: literalOrigin });
  const originOf = throughReferences(literalOrigin, overridden);
  const { raw, variables, unused } = splitVariables(resolved.tree, resolved.referenced, layers, source);
  resolvePretrainPath(raw, originOf);
  resolveLogDir(raw, originOf);
  const { config, tokenizer } = validated(raw, source, originOf);
  return {
    config,
    ignored: ignoredKeysIn(raw),
    variables,
    unused,
    warnings: locatedProblems([...configWarnings(config), ...replyBudgetWarnings(config, tokenizer)], source, originOf).map((w) => w.text),
  };
}

/**
 * The lines `config check` and `train` print once: warnings, ignored keys and interpolation variables
 * (used or not).
 */
export function acceptedNotes(loaded: Omit<LoadedConfig, 'config'>): string[] {
  const notes = loaded.ignored.length > 0 ? [`ignored (accepted for ROLL compatibility, not used): ${loaded.ignored.join(', ')}`] : [];
  return [
    ...loaded.warnings.map((w) => `warning: ${w}`),
    ...notes,
    ...loaded.variables.map((v) => `interpolation variables from ${v.file}: ${v.keys.join(', ')}`),
    ...loaded.unused.map((v) => `unused variables from ${v.file} (nothing refers to them): ${v.keys.join(', ')}`),
  ];
}
