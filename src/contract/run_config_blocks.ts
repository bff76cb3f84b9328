/**
 * The nested blocks of the run config (docs/configs.md): worker roles, env managers, custom envs, reward
 * normalisation, and starpo's own `warmup` and `collapse_guard`. Objects are strict, so an unknown
 * key is an error (config/issues.ts names the nearest known key). Keys whose schema is IGNORED are accepted
 * for ROLL compatibility, kept as written (no defaults) and reported once (config/schema_walk.ts).
 */
import { z } from 'zod';
import { NORM_METHODS, NORM_TYPES } from './enums';
import { ignoredShape } from './ignored';
import { actorModelArgsSchema } from './model_args';
import { nearestKey } from './nearest';
import type { Trajectory } from './trajectory';

export const positiveInt = z.number().int().positive();
export const nonNegativeInt = z.number().int().nonnegative();

/** Sampling settings (ROLL generating_args); docs/configs.md EnvManagerConfig defaults. */
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
  .object(
    Object.fromEntries(Object.entries(generatingArgsSchema.shape).map(([k, s]) => [k, s.unwrap().optional()])) as Overrides<
      typeof generatingArgsSchema.shape
    >,
  )
  .strict();

/** The optimizer keys of ROLL <role>.training_args (AdamW + lr schedule); docs/configs.md, §6. */
const optimizerShape = {
  learning_rate: z.number().positive().default(5e-5),
  adam_beta1: z.number().gte(0).lt(1).default(0.9),
  adam_beta2: z.number().gte(0).lt(1).default(0.999),
  weight_decay: z.number().nonnegative().default(0),
  lr_scheduler_type: z.enum(['constant', 'linear', 'cosine']).default('linear'),
  warmup_steps: nonNegativeInt.default(0),
};

/**
 * actor_train.training_args: the optimizer and the minibatch (per_device_train_batch_size episodes x
 * gradient_accumulation_steps per optimizer step). num_train_epochs is ignored: ppo_epochs counts passes.
 */
const trainingArgsSchema = z
  .object({
    ...optimizerShape,
    per_device_train_batch_size: positiveInt.default(8),
    gradient_accumulation_steps: positiveInt.default(1), // ROLL's TrainingArguments default
    ...ignoredShape(['num_train_epochs']),
  })
  .strict();

/** critic.training_args: the optimizer only; the critic trains on the actor's minibatches (docs/numerics.md §5.3). */
const criticTrainingArgsSchema = z
  .object({
    ...optimizerShape,
    ...ignoredShape(['per_device_train_batch_size', 'gradient_accumulation_steps', 'num_train_epochs']),
  })
  .strict();

/** ROLL worker-block keys that only place work on GPUs or pick a Megatron/vLLM/DeepSpeed strategy. */
const PLACEMENT_KEYS = ['model_args', 'strategy_args', 'device_mapping', 'infer_batch_size', 'data_args'] as const;

/**
 * The worker roles (ROLL actor_train, actor_infer, critic), each with the block it uses; ROLL's other
 * block of the role and the placement keys are ignored (but actor_train's model_args, of which one key is used).
 * ROLL's `reference` role is ignored as a whole (run_config.ts): the reference policy is the run's step-0 policy.
 */
export const actorTrainSchema = z
  .object({
    training_args: trainingArgsSchema.default(trainingArgsSchema.parse({})),
    model_args: actorModelArgsSchema.default(actorModelArgsSchema.parse({})),
    ...ignoredShape([...PLACEMENT_KEYS.filter((k) => k !== 'model_args'), 'generating_args']),
  })
  .strict();

/**
 * Whether the actor's update recomputes each decoder layer in the backward pass (actor_train.model_args,
 * disable_gradient_checkpointing false). Runs stored before the key existed have no model_args: checkpointing, ROLL's default.
 */
export function gradientCheckpointing(actorTrain: { model_args?: { disable_gradient_checkpointing?: boolean | null } }): boolean {
  return !(actorTrain.model_args?.disable_gradient_checkpointing ?? false);
}
export const actorInferSchema = z
  .object({
    generating_args: generatingArgsSchema.default(generatingArgsSchema.parse({})),
    ...ignoredShape([...PLACEMENT_KEYS, 'training_args']),
  })
  .strict();
export const criticSchema = z
  .object({
    training_args: criticTrainingArgsSchema.default(criticTrainingArgsSchema.parse({})),
    ...ignoredShape([...PLACEMENT_KEYS, 'generating_args']),
  })
  .strict();

/**
 * EnvManagerConfig (ROLL train_env_manager / val_env_manager); docs/configs.md-3.
 * group_size_redundancy (ROLL): each group runs group_size + redundancy envs and keeps the first
 * group_size finishers (fewest turns, ties by env id). fixed_states is starpo's own, validation only:
 * true plays the same held-out states at every evaluation instead of new ones (docs/numerics.md §3).
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
    ...ignoredShape(['format_penalty', 'env_manager_cls']), // format penalties are per env, in env_config
  })
  .strict();

/** The {field} placeholders agent_template may use (ROLL formats it with these names; rollout/chat.ts fills them). */
export const AGENT_TEMPLATE_FIELDS = ['turn_idx', 'observation', 'actions_left', 'max_response_length', 'suffix'] as const;

/** agent_template: ROLL's str.format fails on any other placeholder, so a misspelled one is refused here. */
const agentTemplate = z
  .string()
  .default('Turn {turn_idx}:\n{observation}\n')
  .superRefine((text, ctx) => {
    const fields: readonly string[] = AGENT_TEMPLATE_FIELDS;
    for (const [, name] of text.matchAll(/\{(\w+)\}/g)) {
      if (fields.includes(name)) continue;
      const near = nearestKey(name, fields);
      ctx.addIssue({
        code: 'custom',
        message: `unknown placeholder {${name}}${near ? `; did you mean {${near}}?` : ''} (allowed: ${fields.map((f) => `{${f}}`).join(', ')})`,
      });
      return;
    }
  });

/**
 * One custom_envs.<tag> entry; docs/configs.md and §4. env_config is checked by the env's own parser.
 * Ignored ROLL keys: env_manager_cls and agent_runner_cls (one trajectory env manager and runner),
 * use_thread_lock and max_env_step_concurrent (envs run in-process, or on servers all at once), history_length (no step history),
 * user_prompt_format and reward_template (prompts come from agent_template, rewards from the env).
 * episode_timeout_seconds is starpo's own: the env time (reset + steps, wall seconds) one episode may
 * use; an episode over it fails and its group is replaced, like an env that throws.
 */
export const customEnvSchema = z
  .object({
    env_type: z.string().min(1),
    max_steps: positiveInt.default(10),
    max_tokens_per_step: positiveInt.default(64),
    agent_system_template: z.string().default('You are a helpful assistant.'),
    agent_template: agentTemplate,
    env_config: z.record(z.string(), z.unknown()).default({}),
    episode_timeout_seconds: z.number().positive().default(60),
    ...ignoredShape([
      'env_manager_cls',
      'agent_runner_cls',
      'use_thread_lock',
      'max_env_step_concurrent',
      'history_length',
      'user_prompt_format',
      'reward_template',
    ]),
  })
  .strict();

/** The Trajectory fields (trajectory.ts) holding a scalar: what a trajectory can be grouped by. */
type ScalarField = { [K in keyof Trajectory]-?: Trajectory[K] extends string | number | boolean ? K : never }[keyof Trajectory];

/** reward_normalization.grouping by a trajectory field (algo/update.ts groupKeyOf reads it). */
export const TRAJECTORY_GROUP_FIELDS = [
  'trajGroupId',
  'trajId',
  'tag',
  'groupId',
  'envId',
  'seed',
  'split',
  'step',
  'episodeScore',
  'success',
  'truncated',
] as const satisfies readonly ScalarField[];
/** Fails to compile when a scalar field of Trajectory is missing from TRAJECTORY_GROUP_FIELDS. */
type Holds<T extends true> = T;
// biome-ignore lint/correctness/noUnusedVariables: the type exists only to fail compilation
type EveryScalarFieldListed = Holds<[Exclude<ScalarField, (typeof TRAJECTORY_GROUP_FIELDS)[number]>] extends [never] ? true : false>;

/** reward_normalization.grouping values (docs/numerics.md §5.1): ROLL's three, then any scalar trajectory field. */
export const REWARD_GROUPINGS = ['batch', 'traj_group_id', 'tags', ...TRAJECTORY_GROUP_FIELDS] as const;

/**
 * reward_normalization; docs/numerics.md §5.1, ROLL's RewardNormalizationConfig. norm_mean_type / norm_std_type
 * (null: no mean subtracted / no std division) win when set; the deprecated `method` fills those left null
 * (preflight/load.ts with enums.ts resolveNormTypes). ROLL defines global_scale_factor / global_shift_value
 * but never applies them: accepted and ignored.
 */
/** A norm type, or null (filled from `method`): the error names null as allowed too. */
const normType = () =>
  z
    .enum(NORM_TYPES, { error: `expected one of ${NORM_TYPES.map((t) => `"${t}"`).join('|')} or null` })
    .nullable()
    .default(null);

export const rewardNormalizationSchema = z
  .object({
    grouping: z
      .enum(REWARD_GROUPINGS, {
        error: (issue) => {
          const near = nearestKey(String(issue.input), REWARD_GROUPINGS);
          return `expected batch, traj_group_id, tags or a trajectory field (${TRAJECTORY_GROUP_FIELDS.join(', ')})${near ? `; did you mean "${near}"?` : ''}`;
        },
      })
      .default('batch'),
    method: z.enum(NORM_METHODS).default('identity'),
    norm_mean_type: normType(),
    norm_std_type: normType(),
    ...ignoredShape(['global_scale_factor', 'global_shift_value']),
  })
  .strict();

/**
 * The supervised warm-up that teaches a random-init model the answer format:
 * `format` = episodes whose actions are uniformly random valid actions (no skill); `solver` = episodes
 * whose actions come from each env's BFS solver (Env.solve), a solver_fraction of them, the rest random
 * valid actions (RAGEN's "SFT on solver trajectories"), each turn of a solver episode a random valid action
 * with probability solver_noise (DART); `none` = start from the random init. Not a
 * ROLL key; ROLL starts from an instruct model instead.
 */
export const warmupSchema = z
  .object({
    type: z.enum(['format', 'solver', 'none']).default('format'),
    num_episodes: positiveInt.default(256),
    solver_fraction: z.number().gte(0).lte(1).default(1),
    solver_noise: z.number().gte(0).lt(1).default(0),
    train_steps: positiveInt.default(200),
    batch_size: positiveInt.default(16),
    learning_rate: z.number().positive().default(1e-3),
    lr_scheduler_type: z.enum(['constant', 'linear', 'cosine']).default('constant'),
  })
  .strict();

/**
 * `collapse_detection` (RAGEN-2's template-collapse diagnostics, RAGEN's base.yaml keys; docs/numerics.md §7):
 * on step 1 and every `compute_freq` steps, how much the first turn's reasoning depends on its prompt (mutual
 * information and prompt retrieval over the batch), scored `micro_batch_size` rows at a time on at most
 * `num_samples` pairs. Off by default (it costs a forward pass per prompt and pair).
 */
export const collapseDetectionSchema = z
  .object({
    first_turn_enabled: z.boolean().default(false),
    multi_turn_enabled: z
      .literal(false, { error: 'multi-turn sampling is not implemented in starpo; allowed: false (first-turn pairs, first_turn_enabled)' })
      .default(false),
    compute_freq: positiveInt.default(5),
    micro_batch_size: positiveInt.default(128),
    num_samples: positiveInt.nullable().default(64),
  })
  .strict();

/**
 * `early_stop` (RAGEN-2's early stops, off by default; docs/numerics.md §7): stop when the in-group reward
 * std of `window` steps in a row is below `fraction` of its mean over the first `baseline_steps` steps, or when
 * a validation tag's success stays below `threshold` for `window` evaluations in a row.
 */
export const earlyStopSchema = z
  .object({
    reward_variance_collapse: z
      .object({
        enabled: z.boolean().default(false),
        baseline_steps: positiveInt.default(10),
        window: positiveInt.default(10),
        fraction: z.number().positive().default(0.1),
      })
      .strict()
      .default({ enabled: false, baseline_steps: 10, window: 10, fraction: 0.1 }),
    low_validation_success: z
      .object({
        enabled: z.boolean().default(false),
        threshold: z.number().nonnegative().default(0.01),
        window: positiveInt.default(5),
      })
      .strict()
      .default({ enabled: false, threshold: 0.01, window: 5 }),
  })
  .strict();

/**
 * Echo-Trap guard (docs/numerics.md §7, RAGEN): when the mean in-group reward std (rollout/in_group_std)
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
