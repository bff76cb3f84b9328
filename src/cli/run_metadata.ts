/**
 * What an evaluation shows in the Temporal UI besides its history: the static summary and details, set
 * by the client at workflow start. A run's are in workflows/run_text.ts (a sweep sets its children's).
 */
import type { EvalRequest, RunConfig } from '../contract';
import { evalResultKey } from '../storage/keys';
import { groups } from '../workflows/run_text';

/** Which states validation plays. */
export function valStates(config: RunConfig, step: number): string {
  return config.val_env_manager.fixed_states
    ? 'the fixed held-out states (val_env_manager.fixed_states)'
    : `the validation states of step ${step} (new states every evaluation)`;
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
