/**
 * The values the run config accepts for the algorithm's switches (docs/configs.md), and how the deprecated
 * reward_normalization.method fills the norm types left null. The config validates against these and
 * the algorithm (src/algo) branches on them; neither owns them.
 */

/** adv_estimator values served by computeAdvantages (docs/numerics.md §5; grpo is the reinforce path). */
export const ADV_ESTIMATORS = ['reinforce', 'grpo', 'agentic_reinforce', 'gae'] as const;

/**
 * rollout_filter_type values: std (RAGEN-2's name: largest) keeps the highest-std groups, std_rev (smallest) the
 * lowest, top_p is RAGEN-2's linear top-p rule without zero-variance groups (docs/numerics.md §7).
 */
export const FILTER_TYPES = ['std', 'std_rev', 'top_p', 'largest', 'smallest'] as const;
/** One of FILTER_TYPES. */
export type FilterType = (typeof FILTER_TYPES)[number];

/** RAGEN-2's rollout_filter_strategy values (docs/numerics.md §7). */
export const FILTER_STRATEGIES = ['top_p', 'top_k', 'top_k_abs', 'min_p'] as const;
/** One of FILTER_STRATEGIES. */
export type FilterStrategy = (typeof FILTER_STRATEGIES)[number];

/** RAGEN-2's rollout_filter_top_p_prob_mode values: linear (running sum of std) or softmax (probability mass). */
export const TOP_P_PROB_MODES = ['linear', 'softmax'] as const;
/** One of TOP_P_PROB_MODES. */
export type TopPProbMode = (typeof TOP_P_PROB_MODES)[number];

/** RAGEN-2's filter_loss_scaling values: the advantages times 1, the kept ratio, or its square root. */
export const FILTER_LOSS_SCALINGS = ['none', 'linear', 'sqrt'] as const;

/** kl_penalty values (docs/numerics.md §6); `full` needs whole distributions (klFull). */
export const KL_PENALTIES = ['kl', 'abs', 'mse', 'k3', 'full'] as const;
/** One of KL_PENALTIES. */
export type KlPenalty = (typeof KL_PENALTIES)[number];

/** loss_agg_mode values (docs/numerics.md §6). */
export const LOSS_AGG_MODES = ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm'] as const;
/** One of LOSS_AGG_MODES. */
export type LossAggMode = (typeof LOSS_AGG_MODES)[number];

/** reward_normalization.method values (deprecated in ROLL; docs/numerics.md §5.1). asym_clip behaves as mean_std. */
export const NORM_METHODS = ['identity', 'mean', 'mean_std', 'asym_clip'] as const;
/** One of NORM_METHODS. */
export type NormMethod = (typeof NORM_METHODS)[number];

/** reward_normalization.norm_mean_type / norm_std_type values: statistics over the batch or within each group. */
export const NORM_TYPES = ['batch', 'group'] as const;
/** One of NORM_TYPES. */
export type NormType = (typeof NORM_TYPES)[number];

/** Which mean is subtracted and which std divides (null: none), as in ROLL's config. */
export interface NormTypes {
  norm_mean_type: NormType | null;
  norm_std_type: NormType | null;
}

/** The reward_normalization keys that decide NormTypes. */
export interface RewardNormKeys {
  grouping: string;
  method: NormMethod;
  norm_mean_type?: NormType | null;
  norm_std_type?: NormType | null;
}

/**
 * The types a deprecated `method` stands for (ROLL's _resolve_reward_norm_defaults): statistics over the
 * batch for grouping `batch`, within groups for any other grouping.
 */
export function normTypesOf(method: NormMethod, grouping: string): NormTypes {
  const scope: NormType = grouping === 'batch' ? 'batch' : 'group';
  if (method === 'mean') return { norm_mean_type: scope, norm_std_type: null };
  if (method === 'mean_std' || method === 'asym_clip') return { norm_mean_type: scope, norm_std_type: scope };
  return { norm_mean_type: null, norm_std_type: null };
}

/**
 * The types in effect (ROLL's RewardNormalizationConfig.__post_init__): a type set explicitly wins, one
 * left null (or absent, as in configs stored before these keys existed) comes from `method`.
 */
export function resolveNormTypes(keys: RewardNormKeys): NormTypes {
  const fromMethod = normTypesOf(keys.method, keys.grouping);
  return {
    norm_mean_type: keys.norm_mean_type ?? fromMethod.norm_mean_type,
    norm_std_type: keys.norm_std_type ?? fromMethod.norm_std_type,
  };
}

/** track_with values starpo writes (ROLL's tensorboard and wandb, and MLflow; swanlab and stdout are not implemented). */
export const TRACKERS = ['tensorboard', 'mlflow', 'wandb'] as const;
/** One of TRACKERS. */
export type TrackerName = (typeof TRACKERS)[number];

/**
 * The trackers a config names (its track_with as a list without repeats; [] for none). A config stored
 * before starpo read the key may name others (it was ignored then): they are left out.
 */
export function trackersOf(config: { track_with?: TrackerName | TrackerName[] | null }): TrackerName[] {
  const t = config.track_with;
  const named = t == null ? [] : Array.isArray(t) ? t : [t];
  return TRACKERS.filter((name) => named.includes(name));
}
