/**
 * What a run shows in the Temporal UI besides its history: the static summary (one line in the workflow
 * list and at the top of the page) and the static details (markdown, the "Summary & Details" panel), set
 * at workflow start by the client (`starpo train`) or by a sweep for its children (SDK 1.24: a workflow
 * cannot set its own). The current details (step, phase, successes) come from the workflow (format.ts).
 * Pure; safe in workflow code.
 */
import type { RunSpec } from '../contract/run';
import type { EnvManagerConfig } from '../contract/run_config';

/** "8 groups x 4 (rollout_batch_size 32), tags FrozenLake" for one env manager. */
export function groups(manager: EnvManagerConfig, batch: number, batchKey: string): string {
  return `${batch / manager.group_size} groups x ${manager.group_size} (${batchKey} ${batch}), tags ${manager.tags.join(', ')}`;
}

/** Static summary of a run, e.g. "StarPO frozen_lake: FrozenLake with tiny, 30 steps". */
export function runSummary(input: RunSpec): string {
  const c = input.config;
  return `StarPO ${input.configName}: ${c.train_env_manager.tags.join('+')} with ${c.pretrain}, ${c.max_steps} steps`;
}

/** Static details of a run (markdown): config, tags, model, steps, group sizes and the commands to look at it. */
export function runDetails(input: RunSpec): string {
  const c = input.config;
  const id = input.runId;
  return [
    `**StarPO run \`${id}\`**, config \`${input.configName}\``,
    '',
    `- model: \`${c.pretrain}\``,
    `- env tags: train ${c.train_env_manager.tags.join(', ')}; validation ${c.val_env_manager.tags.join(', ')}`,
    `- max_steps: ${c.max_steps}; validation every ${c.eval_steps} steps${c.eval_steps > 0 ? ' and at the end' : ' (off)'}`,
    `- train: ${groups(c.train_env_manager, c.rollout_batch_size, 'rollout_batch_size')}`,
    `- validation: ${groups(c.val_env_manager, c.val_batch_size, 'val_batch_size')}; ${c.val_env_manager.fixed_states ? 'fixed held-out states' : 'new states every evaluation'}`,
    `- seed: ${c.seed}; advantages: ${c.adv_estimator}`,
    '',
    '**Commands**',
    '',
    `- \`starpo status ${id}\`: phase, step, last metrics, validation, checkpoint`,
    `- \`starpo report ${id}\`: an HTML report with learning curves and trajectories`,
    `- \`starpo eval ${id}\`: validation of the latest checkpoint (\`--step N\`, \`--config FILE\`, \`--episodes N\`)`,
    `- \`starpo pause|unpause|stop ${id}\`, \`starpo resume ${id}\``,
  ].join('\n');
}
