/**
 * The nested blocks of the run config (SPEC.md §2): worker roles, env managers, custom envs, reward
 * normalisation, and starpo's own `warmup` and `collapse_guard`. Objects are strict, so an unknown
 * key is an error (load.ts names the nearest known key). Keys typed `z.unknown()` are accepted for
 * ROLL compatibility and reported once as ignored (IGNORED_KEYS in schema.ts).
 */
import { z } from 'zod';

export const positiveInt = z.number().int().positive();
export const nonNegativeInt = z.number().int().nonnegative();

/** A zod shape accepting each of `keys` with any value (ROLL keys starpo accepts and ignores). */
export function ignoredShape<const K extends readonly string[]>(keys: K): { [P in K[number]]: z.ZodOptional<z.ZodUnknown> } {
  return Object.fromEntries(keys.map((k) => [k, z.unknown().optional()])) as { [P in K[number]]: z.ZodOptional<z.ZodUnknown> };
}

/** Sampling settings (ROLL generating_args); SPEC.md §2 EnvManagerConfig defaults. */
export const generatingArgsSchema = z
  .object({
    max_new_tokens: positiveInt.default(32),
    temperature: z.number().nonnegative().default(0.95),
    top_p: z.number().gt(0).lte(1).default(0.7),
    top_k: nonNegativeInt.default(50),
    do_sample: z.boolean().default(true),
    num_beams: z.literal(1).default(1),
    num_return_sequences: z.literal(1).default(1),
  })
  .strict();

/** The optional, default-free version of each field of a shape whose fields all have defaults. */
type Overrides<S> = { [K in keyof S]: S[K] extends z.ZodDefault<infer T> ? z.ZodOptional<T> : never };

/**
 * An env manager's generating_args: any subset of generatingArgsSchema's keys, without defaults, so
 * what it leaves out comes from actor_infer.generating_args (zod's .partial() would keep the defaults).
 */
export const generatingArgsOverridesSchema = z
  .object(Object.fromEntries(Object.entries(generatingArgsSchema.shape).map(([k, s]) => [k, s.unwrap().optional()])) as Overrides<typeof generatingArgsSchema.shape>)
  .strict();

/** Optimiser and batching (ROLL <role>.training_args: AdamW + lr schedule); SPEC.md §2, §6. */
export const trainingArgsSchema = z
  .object({
    learning_rate: z.number().positive().default(5e-5),
    adam_beta1: z.number().gte(0).lt(1).default(0.9),
    adam_beta2: z.number().gte(0).lt(1).default(0.999),
    weight_decay: z.number().nonnegative().default(0),
    lr_scheduler_type: z.enum(['constant', 'linear', 'cosine']).default('linear'),
    warmup_steps: nonNegativeInt.default(0),
    per_device_train_batch_size: positiveInt.default(8),
    gradient_accumulation_steps: positiveInt.default(8),
    num_train_epochs: positiveInt.default(1),
  })
  .strict();

/** ROLL worker-block keys that only place work on GPUs or pick a Megatron/vLLM/DeepSpeed strategy. */
export const WORKER_IGNORED_KEYS = ['model_args', 'strategy_args', 'device_mapping', 'infer_batch_size', 'data_args'] as const;

/**
 * A worker role block (ROLL actor_train, actor_infer, critic, reference): training_args and
 * generating_args are used (by the roles that train or sample); the placement keys are ignored.
 */
export const workerSchema = z
  .object({
    training_args: trainingArgsSchema.default(trainingArgsSchema.parse({})),
    generating_args: generatingArgsSchema.default(generatingArgsSchema.parse({})),
    ...ignoredShape(WORKER_IGNORED_KEYS),
  })
  .strict();

/** ROLL env-manager keys starpo ignores (format penalties are per env, in env_config). */
export const ENV_MANAGER_IGNORED_KEYS = ['format_penalty', 'env_manager_cls'] as const;

/**
 * EnvManagerConfig (ROLL train_env_manager / val_env_manager); SPEC.md §2-3.
 * group_size_redundancy (ROLL): each group runs group_size + redundancy envs and keeps the first
 * group_size finishers (fewest turns, ties by env id). fixed_states is starpo's own, validation only:
 * true plays the same held-out states at every evaluation instead of new ones (SPEC.md §3).
 */
export const envManagerSchema = z
  .object({
    num_env_groups: positiveInt.default(128),
    group_size: positiveInt.default(1),
    group_size_redundancy: nonNegativeInt.default(0),
    fixed_states: z.boolean().default(false),
    tags: z.array(z.string().min(1)).min(1),
    num_groups_partition: z.array(positiveInt).min(1),
    max_env_num_per_worker: nonNegativeInt.default(0),
    generating_args: generatingArgsOverridesSchema.optional(),
    ...ignoredShape(ENV_MANAGER_IGNORED_KEYS),
  })
  .strict();

/** ROLL custom_envs.<tag> keys starpo ignores (one TrajEnvManager, no thread lock, no step history). */
export const CUSTOM_ENV_IGNORED_KEYS = ['env_manager_cls', 'use_thread_lock', 'history_length'] as const;

/**
 * One custom_envs.<tag> entry; SPEC.md §2 and §4. env_config is checked by the env's own parser.
 * episode_timeout_seconds is starpo's own: the env time (reset + steps, wall seconds) one episode may
 * use; an episode over it fails and its group is replaced, like an env that throws (issue 4, item 6).
 */
export const customEnvSchema = z
  .object({
    env_type: z.string().min(1),
    max_steps: positiveInt.default(10),
    max_tokens_per_step: positiveInt.default(64),
    agent_system_template: z.string().default('You are a helpful assistant.'),
    agent_template: z.string().default('Turn {turn_idx}:\n{observation}\n'),
    env_config: z.record(z.string(), z.unknown()).default({}),
    episode_timeout_seconds: z.number().positive().default(60),
    ...ignoredShape(CUSTOM_ENV_IGNORED_KEYS),
  })
  .strict();

/** reward_normalization; SPEC.md §5.1. */
export const rewardNormalizationSchema = z
  .object({
    grouping: z.string().min(1).default('batch'),
    method: z.enum(['identity', 'mean', 'mean_std', 'asym_clip']).default('identity'),
  })
  .strict();

/**
 * The supervised warm-up that teaches a random-init model the answer format (issue 2, item 5):
 * `format` = episodes whose actions are uniformly random valid actions (no skill); `solver` = episodes
 * whose actions come from each env's BFS solver (Env.solve), a solver_fraction of them, the rest random
 * valid actions (RAGEN's "SFT on solver trajectories"); `none` = start from the random init. Not a
 * ROLL key; ROLL starts from an instruct model instead.
 */
export const warmupSchema = z
  .object({
    type: z.enum(['format', 'solver', 'none']).default('format'),
    num_episodes: positiveInt.default(256),
    solver_fraction: z.number().gte(0).lte(1).default(1),
    train_steps: positiveInt.default(200),
    batch_size: positiveInt.default(16),
    learning_rate: z.number().positive().default(1e-3),
  })
  .strict();

/**
 * Echo-Trap guard (SPEC.md §7, RAGEN): when the mean in-group reward std (rollout/in_group_std)
 * stays below `min_in_group_std` AND the token entropy (actor/entropy) below `min_entropy` for
 * `patience` consecutive steps, `stop` the run or `alert` (log and mark it). Not a ROLL key; starpo's
 * own, like `warmup`.
 */
export const collapseGuardSchema = z
  .object({
    enabled: z.boolean().default(false),
    min_in_group_std: z.number().nonnegative().default(0.01),
    min_entropy: z.number().nonnegative().default(0.05),
    patience: positiveInt.default(3),
    action: z.enum(['stop', 'alert']).default('alert'),
  })
  .strict();
