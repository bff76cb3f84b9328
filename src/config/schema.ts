/**
 * The run configuration: ROLL's AgenticConfig key names (SPEC.md §2) with their defaults, as a zod
 * schema. Objects are strict, so an unknown key is an error (load.ts names the nearest known key).
 * Keys that only place work on GPUs or pick Megatron/vLLM strategies are accepted and reported once
 * as ignored (IGNORED_KEYS).
 */
import { z } from 'zod';

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();

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

/** Optimiser and batching (ROLL actor_train.training_args); SPEC.md §2. */
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

/** A worker role block (actor_train, actor_infer, reference); only the keys starpo uses are typed. */
const workerSchema = z
  .object({
    model_args: z.record(z.string(), z.unknown()).optional(),
    training_args: trainingArgsSchema.default(trainingArgsSchema.parse({})),
    generating_args: generatingArgsSchema.default(generatingArgsSchema.parse({})),
    strategy_args: z.unknown().optional(),
    device_mapping: z.unknown().optional(),
    infer_batch_size: z.unknown().optional(),
    data_args: z.unknown().optional(),
  })
  .strict();

/** EnvManagerConfig (ROLL train_env_manager / val_env_manager); SPEC.md §2-3. */
export const envManagerSchema = z
  .object({
    num_env_groups: positiveInt.default(128),
    group_size: positiveInt.default(1),
    group_size_redundancy: z.literal(0).default(0),
    tags: z.array(z.string().min(1)).min(1),
    num_groups_partition: z.array(positiveInt).min(1),
    max_env_num_per_worker: nonNegativeInt.default(0),
    generating_args: generatingArgsSchema.partial().optional(),
  })
  .strict();

/** One custom_envs.<tag> entry; SPEC.md §2 and §4. */
export const customEnvSchema = z
  .object({
    env_type: z.string().min(1),
    max_steps: positiveInt.default(10),
    max_tokens_per_step: positiveInt.default(64),
    agent_system_template: z.string().default('You are a helpful assistant.'),
    agent_template: z.string().default('Turn {turn_idx}:\n{observation}\n'),
    env_config: z.record(z.string(), z.unknown()).default({}),
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
 * `format` = episodes whose actions are uniformly random valid actions (no skill); `none` = start from
 * the random init. Not a ROLL key;
 * ROLL starts from an instruct model instead.
 */
export const warmupSchema = z
  .object({
    type: z.enum(['format', 'none']).default('format'),
    num_episodes: positiveInt.default(256),
    train_steps: positiveInt.default(200),
    batch_size: positiveInt.default(16),
    learning_rate: z.number().positive().default(1e-3),
  })
  .strict();

/** The whole run config (ROLL AgenticConfig subset used by starpo); SPEC.md §2. */
export const runConfigSchema = z
  .object({
    exp_name: z.string().default('starpo'),
    seed: z.number().int().default(42),
    max_steps: positiveInt.default(500),
    save_steps: positiveInt.default(50),
    max_ckpt_to_keep: nonNegativeInt.default(0),
    eval_steps: nonNegativeInt.default(10),
    logging_steps: positiveInt.default(1),
    rollout_batch_size: positiveInt.default(128),
    val_batch_size: positiveInt.default(128),
    sequence_length: positiveInt.default(2048),
    pretrain: z.enum(['tiny']).default('tiny'),
    adv_estimator: z.enum(['reinforce', 'grpo', 'agentic_reinforce']).default('reinforce'),
    ppo_epochs: positiveInt.default(1),
    max_grad_norm: z.number().positive().default(1.0),
    gamma: z.number().gte(0).lte(1).default(1.0),
    lambd: z.number().gte(0).lte(1).default(0.95),
    pg_clip: z.number().positive().default(0.2),
    loss_agg_mode: z
      .enum(['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm'])
      .default('seq-mean-token-mean'),
    init_kl_coef: z.literal(0).default(0),
    entropy_loss_coef: z.literal(0).default(0),
    whiten_advantages: z.boolean().default(false),
    reward_clip: z.number().positive().nullable().default(null),
    advantage_clip: z.number().positive().nullable().default(null),
    reward_normalization: rewardNormalizationSchema.default(rewardNormalizationSchema.parse({})),
    actor_train: workerSchema.default(workerSchema.parse({})),
    actor_infer: workerSchema.default(workerSchema.parse({})),
    reference: workerSchema.optional(),
    train_env_manager: envManagerSchema,
    val_env_manager: envManagerSchema,
    custom_envs: z.record(z.string(), customEnvSchema),
    warmup: warmupSchema.default(warmupSchema.parse({})),
    // Accepted for ROLL compatibility, not used by starpo (reported once as ignored):
    track_with: z.unknown().optional(),
    tracker_kwargs: z.unknown().optional(),
    output_dir: z.unknown().optional(),
    logging_dir: z.unknown().optional(),
    checkpoint_config: z.unknown().optional(),
    num_gpus_per_node: z.unknown().optional(),
    system_envs: z.unknown().optional(),
    render_save_dir: z.unknown().optional(),
  })
  .strict();

/** The validated, defaults-applied config: the RunSpec's `config` (plain JSON). */
export type RunConfig = z.infer<typeof runConfigSchema>;
export type EnvManagerConfig = z.infer<typeof envManagerSchema>;
export type CustomEnvConfig = z.infer<typeof customEnvSchema>;
export type GeneratingArgs = z.infer<typeof generatingArgsSchema>;

/** Dotted paths accepted for ROLL compatibility that starpo does not use. */
export const IGNORED_KEYS = [
  'track_with', 'tracker_kwargs', 'output_dir', 'logging_dir', 'checkpoint_config', 'num_gpus_per_node',
  'system_envs', 'render_save_dir', 'actor_train.strategy_args', 'actor_train.device_mapping',
  'actor_train.infer_batch_size', 'actor_train.model_args', 'actor_train.data_args', 'actor_infer.strategy_args',
  'actor_infer.device_mapping', 'actor_infer.infer_batch_size', 'actor_infer.model_args', 'actor_infer.data_args',
  'reference',
] as const;
