/**
 * Activities of `starpo eval` (workflow starpoEvaluation, task queue "starpo-rollout"): `prepareEval`
 * fixes what an evaluation plays in runs/<run>/evals/<name>/eval.json (the rollout activities of the
 * evaluation read their config there), `writeEvalResult` stores its result.json last. Both are
 * idempotent (same input, same objects); neither touches the run's training rollouts or metrics.
 */

import type { EvalRequest, EvalResult, EvalSpec } from '../contract';
import { ConfigError } from '../contract';
import { withValEpisodes } from '../rollout/plan';
import { evalResultKey, evalSpecKey, runKey } from '../storage/keys';
import type { ActivityRuntime } from './runtime';

/** The stored spec of an evaluation (its rollouts read the config from here). */
export async function readEvalSpec(rt: ActivityRuntime, runId: string, name: string): Promise<EvalSpec> {
  return (await rt.store.getJson(evalSpecKey(runId, name))) as EvalSpec;
}

/**
 * Builds prepareEval: the request's config (default the run's run.json) with its episodes applied,
 * written to runs/<run>/evals/<name>/eval.json and returned.
 * @throws ConfigError (non-retryable) when the run has no run.json or the episodes are not a multiple of the val group_size
 */
export function prepareEvalActivity(rt: ActivityRuntime) {
  return async function prepareEval(request: EvalRequest): Promise<EvalSpec> {
    if (!request.config && !(await rt.store.exists(runKey(request.runId)))) {
      throw new ConfigError(runKey(request.runId), ['missing: the run was never prepared or its folder was deleted']);
    }
    const { configName, config } = request.config ?? (await rt.run(request.runId));
    const spec: EvalSpec = {
      runId: request.runId,
      configName,
      config: request.episodes === undefined ? config : withValEpisodes(config, request.episodes),
      name: request.name,
      checkpoint: request.checkpoint,
      step: request.step,
    };
    await rt.store.putJson(evalSpecKey(request.runId, request.name), spec);
    return spec;
  };
}

/** Builds writeEvalResult: stores the result at runs/<run>/evals/<name>/result.json. */
export function writeEvalResultActivity(rt: ActivityRuntime) {
  return async function writeEvalResult(result: EvalResult): Promise<void> {
    await rt.store.putJson(evalResultKey(result.runId, result.name), result);
  };
}
