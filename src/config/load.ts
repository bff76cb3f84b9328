/**
 * YAML -> validated RunConfig (SPEC.md §2): parse with `yaml`, validate with the zod schema, apply
 * defaults, then check the cross-key rules (batch sizes, tags, partitions). Every problem is
 * reported at once as a ConfigError naming the key, the value and what is allowed.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError, nearestKey } from './errors';
import { IGNORED_KEYS, RunConfig, runConfigSchema, EnvManagerConfig } from './schema';
import { ENV_TYPES } from '../envs/registry';

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

/** The raw value at a path of the parsed YAML, for error messages. */
function valueAt(raw: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let node = raw;
  for (const part of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[part];
  }
  return node;
}

const show = (v: unknown) => (v === undefined ? '(missing)' : JSON.stringify(v));

/** Turns zod issues into one readable line each. */
function describeIssues(error: z.ZodError, raw: unknown): string[] {
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

/** Cross-key rules of SPEC.md §2-3 that a per-key schema cannot express. */
function crossKeyProblems(cfg: RunConfig): string[] {
  const problems: string[] = [];
  const manager = (name: 'train_env_manager' | 'val_env_manager', m: EnvManagerConfig, batch: number, batchKey: string) => {
    if (m.tags.length !== m.num_groups_partition.length) {
      problems.push(`\`${name}.num_groups_partition\`: ${show(m.num_groups_partition)} must have one entry per tag (${m.tags.length} tags: ${m.tags.join(', ')})`);
    }
    const sum = m.num_groups_partition.reduce((a, b) => a + b, 0);
    if (sum !== m.num_env_groups) {
      problems.push(`\`${name}.num_groups_partition\`: ${show(m.num_groups_partition)} sums to ${sum}; it must sum to num_env_groups (${m.num_env_groups})`);
    }
    if (batch % m.group_size !== 0) {
      problems.push(`\`${batchKey}\`: ${batch} is not a multiple of ${name}.group_size (${m.group_size}); allowed: k * ${m.group_size}`);
    }
    if (m.max_env_num_per_worker > 0 && m.max_env_num_per_worker % m.group_size !== 0) {
      problems.push(`\`${name}.max_env_num_per_worker\`: ${m.max_env_num_per_worker} must be 0 (all in one worker) or a multiple of group_size (${m.group_size}) so a group stays in one worker`);
    }
    for (const tag of m.tags) {
      if (!(tag in cfg.custom_envs)) {
        problems.push(`\`${name}.tags\`: tag ${show(tag)} has no entry in custom_envs (defined: ${Object.keys(cfg.custom_envs).join(', ') || 'none'})`);
      }
    }
  };
  manager('train_env_manager', cfg.train_env_manager, cfg.rollout_batch_size, 'rollout_batch_size');
  manager('val_env_manager', cfg.val_env_manager, cfg.val_batch_size, 'val_batch_size');
  for (const [tag, env] of Object.entries(cfg.custom_envs)) {
    if (!ENV_TYPES.includes(env.env_type)) {
      problems.push(`\`custom_envs.${tag}.env_type\`: ${show(env.env_type)} is not a known env type (allowed: ${ENV_TYPES.join(', ')})`);
    }
  }
  const train = cfg.actor_train.training_args;
  const miniBatch = train.per_device_train_batch_size * train.gradient_accumulation_steps;
  if (cfg.rollout_batch_size % miniBatch !== 0) {
    problems.push(`\`actor_train.training_args\`: per_device_train_batch_size * gradient_accumulation_steps = ${miniBatch} must divide rollout_batch_size (${cfg.rollout_batch_size})`);
  }
  return problems;
}

/** Dotted paths of IGNORED_KEYS present in the raw config (to report once). */
export function ignoredKeysIn(raw: unknown): string[] {
  return IGNORED_KEYS.filter((path) => valueAt(raw, path.split('.')) !== undefined);
}

/**
 * Validates a parsed config object and applies defaults.
 * @param raw the parsed YAML (plain object)
 * @param source a name for messages (file path)
 * @throws ConfigError listing every bad key with its value and what is allowed
 */
export function validateConfig(raw: unknown, source = 'config'): RunConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(source, [`the top level must be a mapping of ROLL config keys, got ${show(raw)}`]);
  }
  const parsed = runConfigSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(source, describeIssues(parsed.error, raw));
  const problems = crossKeyProblems(parsed.data);
  if (problems.length > 0) throw new ConfigError(source, problems);
  return parsed.data;
}

/**
 * Reads, parses and validates a YAML config file.
 * @throws ConfigError when the file is missing, is not YAML, or fails validation
 */
export function loadConfigFile(path: string): { config: RunConfig; ignored: string[] } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(path, [`cannot read the file: ${(err as Error).message}`]);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new ConfigError(path, [`not valid YAML: ${(err as Error).message}`]);
  }
  return { config: validateConfig(raw, path), ignored: ignoredKeysIn(raw) };
}
