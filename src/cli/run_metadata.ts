/**
 * What a run and an evaluation show in the Temporal UI besides their history: the static summary
 * (one line in the workflow list and at the top of the page) and the static details (markdown, the
 * "Summary & Details" panel), set by the client at workflow start (SDK 1.24: a workflow cannot set
 * its own). The current details (step, phase, successes) come from the workflow (format.ts).
 */
import type { EnvManagerConfig, EvalRequest, RunConfig, RunSpec } from '../contract';
import { evalResultKey } from '../storage/keys';

/** "8 groups x 4 (rollout_batch_size 32), tags FrozenLake" for one env manager. */
function groups(manager: EnvManagerConfig, batch: number, batchKey: string): string {
  return `${batch / manager.group_size} groups x ${manager.group_size} (${batchKey} ${batch}), tags ${manager.tags.join(', ')}`;
}

/** Which states validation plays. */
export function valStates(config: RunConfig, step: number): string {
  return config.val_env_manager.fixed_states
    ? 'the fixed held-out states (val_env_manager.fixed_states)'
    : `the validation states of step ${step} (new states every evaluation)`;
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

/** Static summary of an evaluation, e.g. "eval of frozen_lake-... step 30: FrozenLake x 128 episodes (frozen_lake)". */
export function evalSummary(request: EvalRequest, config: RunConfig, configName: string): string {
  return `eval of ${request.runId} step ${request.step}: ${config.val_env_manager.tags.join('+')} x ${config.val_batch_size} episodes (${configName})`;
}

/** Static details of an evaluation (markdown): what it plays and where the result goes. */
export function evalDetails(request: EvalRequest, config: RunConfig, configName: string): string {
  const v = config.val_env_manager;
  return [
    `**Evaluation \`${request.name}\`** of run \`${request.runId}\``,
    '',
    `- checkpoint: \`${request.checkpoint.key}\` (step ${request.step})`,
    `- validation settings of \`${configName}\`: ${groups(v, config.val_batch_size, 'val_batch_size')}`,
    `- states: ${valStates(config, request.step)}`,
    `- result: \`${evalResultKey(request.runId, request.name)}\``,
  ].join('\n');
}
