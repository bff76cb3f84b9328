/**
 * Settings that load but do not do what they say: configs that run but cannot learn, and ROLL keys starpo
 * accepts and does not use. Reported once by `config check` and `train`, without refusing the config
 * (ROLL accepts them too).
 */
import { type RunConfig, resolveNormTypes } from '../contract';

/** Groupings whose groups are the env groups (group_size members each). */
const ENV_GROUP_GROUPINGS = ['traj_group_id', 'trajGroupId'];

/**
 * A normalisation group of one member gets a normalised score of 0 under a group mean (s - s) and under
 * any std (ROLL zeroes a group of one whenever it divides by a std), so every advantage is 0. That happens
 * when the training groups have one member (train_env_manager.group_size 1) and the scores are grouped by
 * env group, or always when grouped by trajectory. Validation is not normalised, so its group_size is free.
 */
function singletonGroupWarning(cfg: RunConfig): string[] {
  const { grouping } = cfg.reward_normalization;
  const why =
    grouping === 'trajId'
      ? `reward_normalization.grouping ${grouping} puts each trajectory in a group of its own`
      : ENV_GROUP_GROUPINGS.includes(grouping) && cfg.train_env_manager.group_size === 1
        ? `train_env_manager.group_size 1 with reward_normalization.grouping ${grouping} puts each trajectory in a group of its own`
        : undefined;
  if (why === undefined) return [];
  const types = resolveNormTypes(cfg.reward_normalization);
  const zeroing = [
    types.norm_mean_type === 'group' ? 'norm_mean_type group' : undefined,
    types.norm_std_type !== null ? `norm_std_type ${types.norm_std_type}` : undefined,
  ].filter((t) => t !== undefined);
  if (zeroing.length === 0) return [];
  // A null type is filled from `method`, so the remedy without group statistics names `method` too.
  const groups =
    grouping === 'trajId' ? 'reward_normalization.grouping traj_group_id with group_size >= 2' : 'train_env_manager.group_size >= 2';
  return [
    `${why}, and reward_normalization ${zeroing.join(' / ')} then makes every normalised score and every advantage 0 ` +
      `(nothing is learnt); use ${groups}, grouping batch or tags, or no group statistics ` +
      '(reward_normalization.method identity, or method mean with norm_mean_type batch)',
  ];
}

/**
 * ROLL keys that are accepted (a ROLL config loads unchanged) but change nothing here, when set to anything
 * but the value that matches what starpo does: `exp_name` (a run is named by its run id) and `logging_steps`
 * (every step's metrics are written and logged).
 */
function unusedKeyWarnings(cfg: RunConfig): string[] {
  const out: string[] = [];
  if (cfg.exp_name !== 'starpo') {
    out.push(
      `\`exp_name\` (${JSON.stringify(cfg.exp_name)}) is ignored: a run is named by its run id (\`--run-id\`, default <config name>-<time>)`,
    );
  }
  if (cfg.logging_steps !== 1) {
    out.push(
      `\`logging_steps\` (${cfg.logging_steps}) is ignored: every step's metrics are written (runs/<run>/metrics/step-N.json) and logged`,
    );
  }
  return out;
}

/**
 * A positive `format_penalty` (env_config; negative in ROLL's traj_envs.yaml) rewards an answer that
 * does not parse, so the policy can learn to stop answering. Training tags only: validation is not learnt from.
 */
function formatPenaltyWarnings(cfg: RunConfig): string[] {
  return [...new Set(cfg.train_env_manager.tags)].flatMap((tag) => {
    const penalty = cfg.custom_envs[tag]?.env_config.format_penalty;
    if (typeof penalty !== 'number' || penalty <= 0) return [];
    return [
      `\`custom_envs.${tag}.env_config.format_penalty\` (${penalty}) is positive: an answer that does not parse earns a reward, ` +
        "so the policy can learn to stop answering; a penalty is 0 or negative (ROLL's traj_envs.yaml: -0.15 Sokoban, -0.01 FrozenLake)",
    ];
  });
}

/** One line per setting that loads but keeps the run from learning, or that is ignored (empty when none). */
export function configWarnings(cfg: RunConfig): string[] {
  return [...singletonGroupWarning(cfg), ...formatPenaltyWarnings(cfg), ...unusedKeyWarnings(cfg)];
}
