/**
 * The run configuration (what run.json and the workflow input carry): ROLL's AgenticConfig key names
 * (docs/configs.md) with starpo's defaults, as a zod schema. Objects are strict, so an unknown key is an
 * error; keys starpo accepts and does not use are reported once as ignored (config/schema_walk.ts).
 * Nested blocks live in run_config_blocks.ts; loading, overrides and checks live in src/config.
 */
import { z } from 'zod';
import {
  ADV_ESTIMATORS,
  FILTER_LOSS_SCALINGS,
  FILTER_STRATEGIES,
  FILTER_TYPES,
  KL_PENALTIES,
  LOSS_AGG_MODES,
  TOP_P_PROB_MODES,
  TRACKERS,
} from './enums';
import { ignoredShape } from './ignored';
import { HEARTBEAT_TIMEOUT_DEFAULT_SECONDS, HEARTBEAT_TIMEOUT_MIN_SECONDS } from './liveness';
import {
  actorInferSchema,
  actorTrainSchema,
  collapseDetectionSchema,
  collapseGuardSchema,
  criticSchema,
  customEnvSchema,
  earlyStopSchema,
  envManagerSchema,
  type generatingArgsSchema,
  nonNegativeInt,
  positiveInt,
  rewardNormalizationSchema,
  warmupSchema,
} from './run_config_blocks';

/**
 * ROLL top-level keys starpo accepts and ignores: output folders, GPU counts, Hydra's own block, and the
 * `reference` role (the reference policy is the run's step-0 policy, docs/numerics.md §5.2).
 */
const TOP_IGNORED_KEYS = [
  'output_dir',
  'logging_dir',
  'checkpoint_config',
  'num_gpus_per_node',
  'system_envs',
  'render_save_dir',
  'resume_from_checkpoint',
  'reward_pretrain',
  'hydra',
  'reference',
] as const;

const probability = z.number().gt(0).lte(1);

const trackerName = z.enum(TRACKERS);

/**
 * ROLL's `track_with`: one tracker, or a list of them (starpo writes to each), or null for none. Trackers
 * log every step's metrics from the store on the control side (src/trackers, docs/operating.md "Trackers").
 */
const trackWithSchema = (() => {
  const allowed = `allowed: ${TRACKERS.join(', ')}, a non-empty list of them, or null (ROLL's swanlab and stdout are not implemented)`;
  return z.union([trackerName, z.array(trackerName).min(1, { error: () => allowed })], { error: () => allowed }).nullable();
})();

/** ROLL's `tracker_kwargs` as the trackers starpo writes use them. */
const trackerKwargsSchema = z
  .object({
    // tensorboard, wandb: the folder of the event files or W&B run files (a run's go to <log_dir>/<runId>), relative to the config file
    log_dir: z.string().min(1, { error: () => 'allowed: a folder path' }),
    // mlflow: the server (default: MLFLOW_TRACKING_URI of the process that writes), an http(s) URL
    tracking_uri: z.url({ protocol: /^https?$/, error: () => 'allowed: an http:// or https:// URL of an MLflow server' }),
    // mlflow: the experiment of a run that is not a sweep's; wandb: the project (default: the sweep id, else the config's exp_name)
    project: z.string().min(1, { error: () => 'allowed: an MLflow experiment or W&B project name' }),
    // wandb, as ROLL's WandbTracker passes them to wandb.init (name: the display name, default the run id) and wandb.login
    name: z.string().min(1, { error: () => 'allowed: a W&B run name' }),
    notes: z.string(),
    tags: z.array(z.string().min(1)),
    api_key: z.string().min(1, { error: () => 'allowed: a W&B API key' }),
  })
  .partial()
  .strict();

/**
 * Trajectories per step. The cap is far above any ROLL or RAGEN config; without it a mistyped value
 * (1e9) would plan hundreds of millions of groups before the config check could answer.
 */
const batchSize = positiveInt.max(65536);

/** Default of watchdog_seconds: far above the seconds between two heartbeats of any activity of the CPU quickstart. */
export const WATCHDOG_DEFAULT_SECONDS = 300;

/** The whole run config (ROLL AgenticConfig as starpo uses it); each key: meaning and source. */
export const runConfigSchema = z
  .object({
    // Pipeline (docs/configs.md).
    exp_name: z.string().default('starpo'),
    seed: z.number().int().default(42), // base seed; also the validation base seed (§3)
    max_steps: positiveInt.default(500), // pipeline steps: one rollout + one update each
    save_steps: positiveInt.default(50),
    max_ckpt_to_keep: nonNegativeInt.default(0), // 0 = keep all
    eval_steps: nonNegativeInt.default(10), // validation at step 0 and every eval_steps (0 disables)
    logging_steps: positiveInt.default(1),
    rollout_batch_size: batchSize.default(128), // trajectories per step; a multiple of train group_size
    val_batch_size: batchSize.default(128),
    sequence_length: positiveInt.default(2048), // max tokens of one whole multi-turn trajectory (§4)
    /**
     * The initial policy (ROLL's `pretrain`): the built-in preset `tiny` (random init, char tokenizer) or
     * an HF Qwen2 or Llama model folder (config.json, model.safetensors, tokenizer.json; e.g. from `starpo export`),
     * resolved relative to the config file that sets it and checked at load time (src/preflight).
     * Only the update worker that prepares the run reads the folder.
     */
    pretrain: z
      .string()
      .min(1, { error: () => 'must be "tiny" or the path of an HF Qwen2 or Llama model folder' })
      .default('tiny'),
    /**
     * Sizes that replace the tiny preset's (HF run_clm's `config_overrides` for a model trained from scratch,
     * as a mapping of Qwen2Config keys); only with `pretrain: tiny`, since a folder's weights fix its sizes.
     */
    config_overrides: z
      .object({
        hidden_size: positiveInt,
        intermediate_size: positiveInt,
        num_hidden_layers: positiveInt,
        num_attention_heads: positiveInt,
        num_key_value_heads: positiveInt,
      })
      .partial()
      .strict()
      .default({}),

    // Advantages (docs/numerics.md §5): gae needs the critic below; grpo is the reinforce code path.
    adv_estimator: z.enum(ADV_ESTIMATORS).default('gae'),
    gamma: z.number().gte(0).lte(1).default(1.0), // discount
    lambd: z.number().gte(0).lte(1).default(0.95), // GAE lambda
    whiten_advantages: z.boolean().default(false), // global masked whitening (§5.4)
    reward_clip: z.number().positive().nullable().default(null), // clamp normalised episode rewards (§5.1)
    advantage_clip: z.number().positive().nullable().default(null), // clamp final advantages (§5.5)
    reward_normalization: rewardNormalizationSchema.default(rewardNormalizationSchema.parse({})),

    // Actor loss (docs/numerics.md §6).
    ppo_epochs: positiveInt.default(1), // passes over the batch; minibatches shuffled with a seed
    max_grad_norm: z.number().positive().default(1.0), // global L2 clip
    pg_clip: z.number().positive().default(0.2), // symmetric ratio clip
    use_pg_clip_range: z.boolean().default(false), // decoupled "clip-higher": pg_clip_low / pg_clip_high
    pg_clip_low: z.number().positive().default(0.2),
    pg_clip_high: z.number().positive().default(0.2),
    dual_clip_loss: z.boolean().default(false), // dual clip for A<0 with c = 1 + 2*pg_clip
    loss_agg_mode: z.enum(LOSS_AGG_MODES).default('seq-mean-token-mean'),
    entropy_loss_coef: z.number().nonnegative().default(0), // entropy bonus (computed only when > 0)

    // KL to the reference policy = the run's step-0 policy (docs/numerics.md §5.2, §6).
    init_kl_coef: z.number().nonnegative().default(0.2), // beta of the reward-side KL
    kl_penalty: z.enum(KL_PENALTIES).default('kl'), // reward-side KL estimator
    target_kl: z.number().positive().nullable().default(null), // set: adaptive beta controller
    kl_horizon: positiveInt.default(10000), // horizon of the adaptive controller
    add_token_level_kl: z.boolean().default(false), // only then is beta*KL subtracted from token rewards
    use_kl_loss: z.boolean().default(false), // k3 KL(pi||ref) as a loss term
    kl_loss_coef: z.number().nonnegative().default(0),

    // Critic (adv_estimator gae; docs/numerics.md §5.3, ROLL's `critic` role).
    critic_warmup: nonNegativeInt.default(0), // the actor trains only once step >= critic_warmup
    value_clip: z.number().positive().nullable().default(null), // ROLL's critic value clipping (null = off, ROLL's default)

    // Rollouts.
    async_generation_ratio: z.number().nonnegative().default(0), // ROLL's: rollouts run r steps ahead of the update (an integer; preflight/checks.ts)
    // StarPO-S variance filtering (docs/numerics.md §7, RAGEN names): keep the top fraction of whole groups by the
    // std of raw episode scores (std: highest, std_rev: lowest); top_p: the ratio is p, the fraction of
    // the total in-group variance to keep. 1 = keep everything.
    rollout_filter_ratio: probability.default(1),
    rollout_filter_type: z.enum(FILTER_TYPES).default('std'),
    // RAGEN-2's selection (set rollout_filter_strategy to use it; rollout_filter_ratio is then unused): the
    // strategy, its value, whether zero-variance groups are candidates, the top-p mode and eps, how the
    // advantages scale with the kept ratio, and how many steps in a row may keep nothing before the run stops.
    rollout_filter_strategy: z.enum(FILTER_STRATEGIES).nullable().default(null),
    rollout_filter_value: z.number().positive().default(1),
    rollout_filter_include_zero: z.boolean().default(true),
    rollout_filter_top_p_prob_mode: z.enum(TOP_P_PROB_MODES).default('linear'),
    rollout_filter_selection_eps: z.number().nonnegative().default(0.01),
    filter_loss_scaling: z.enum(FILTER_LOSS_SCALINGS).default('none'),
    rollout_filter_empty_stop_steps: nonNegativeInt.default(5), // 0 = never stop
    collapse_guard: collapseGuardSchema.default(collapseGuardSchema.parse({})), // starpo's own (§7)
    early_stop: earlyStopSchema.default(earlyStopSchema.parse({})), // RAGEN-2's early stops (§7), off by default
    collapse_detection: collapseDetectionSchema.default(collapseDetectionSchema.parse({})), // RAGEN-2's MI diagnostics (§7), off by default

    // Worker roles (ROLL), each with the block it uses (run_config_blocks.ts); `reference` is ignored.
    actor_train: actorTrainSchema.default(actorTrainSchema.parse({})),
    actor_infer: actorInferSchema.default(actorInferSchema.parse({})),
    critic: criticSchema.default(criticSchema.parse({})),

    // Envs (docs/configs.md-4, §8).
    train_env_manager: envManagerSchema,
    val_env_manager: envManagerSchema,
    custom_envs: z.record(z.string(), customEnvSchema),
    warmup: warmupSchema.default(warmupSchema.parse({})), // starpo's own: the format warm-up
    // starpo's own: an activity without progress (a heartbeat) for this long ends its worker process,
    // so Temporal retries the attempt on a fresh one (activities/watchdog.ts); 0 = off. It is also the
    // longest an activity may compute between two heartbeats: until then a relay thread heartbeats for it
    // (activities/heartbeat_relay.ts).
    watchdog_seconds: z
      .number()
      .refine((s) => s === 0 || s >= 10, { message: 'allowed: 0 (off) or a number of seconds >= 10' })
      .default(WATCHDOG_DEFAULT_SECONDS),
    // starpo's own: the heartbeat timeout of every activity of the run (workflows/proxies.ts): how soon the
    // attempt of a dead worker is retried. Below watchdog_seconds (preflight/checks.ts).
    track_with: trackWithSchema.default(null),
    tracker_kwargs: trackerKwargsSchema.default({}),
    heartbeat_timeout_seconds: z
      .number()
      .gte(HEARTBEAT_TIMEOUT_MIN_SECONDS, { error: () => `allowed: a number of seconds >= ${HEARTBEAT_TIMEOUT_MIN_SECONDS}` })
      .default(HEARTBEAT_TIMEOUT_DEFAULT_SECONDS),
    ...ignoredShape(TOP_IGNORED_KEYS),
  })
  .strict();

/** The validated, defaults-applied config: the RunSpec's `config` (plain JSON). */
export type RunConfig = z.infer<typeof runConfigSchema>;
export type EnvManagerConfig = z.infer<typeof envManagerSchema>;
export type CustomEnvConfig = z.infer<typeof customEnvSchema>;
export type GeneratingArgs = z.infer<typeof generatingArgsSchema>;
