/**
 * Workflow `starpoEvaluation` (task queue "starpo"; `starpo eval`): validation only, for one checkpoint
 * of a run, played by the same rollout activities as the training's validation. Every activity runs on
 * "starpo-rollout", so rollout workers and a control worker suffice. Deterministic, no I/O.
 */
import { setCurrentDetails, setHandler } from '@temporalio/workflow';
import type { EvalRequest, EvalResult, EvalSpec } from '../contract/activities';
import type { MetricSums } from '../contract/trajectory';
import { type EvalProgress, evalProgressQuery } from '../contract/workflow';
import { meanMetrics } from '../rollout/metrics';
import { planShards } from '../rollout/plan';
import { activityProxies } from './proxies';
import { playValidation } from './validation';

/** The result of an evaluation from its spec and merged sums: per-tag success, score and episodes, and every val/ metric. */
function evalResult(spec: EvalSpec, sums: MetricSums): EvalResult {
  const metrics = meanMetrics(sums, 'val/');
  const tags: EvalResult['tags'] = {};
  for (const tag of spec.config.val_env_manager.tags) {
    tags[tag] = {
      episodes: sums.counts[`env/${tag}/success`] ?? 0,
      success: metrics[`val/env/${tag}/success`],
      score: metrics[`val/${tag}/score`],
    };
  }
  return {
    runId: spec.runId,
    name: spec.name,
    configName: spec.configName,
    checkpoint: spec.checkpoint,
    step: spec.step,
    episodes: sums.counts['env/success'] ?? 0,
    tags,
    metrics,
  };
}

/** One line for the Temporal UI's current details, e.g. "eval of step 2 · validation · 1/2 shards · 64 episodes". */
function detailsLine(p: EvalProgress): string {
  return [`eval of step ${p.step}`, p.phase, `${p.shardsDone}/${p.shards} shards`, `${p.episodes} episodes`].join(' · ');
}

/**
 * Validation of one checkpoint: prepareEval writes runs/<run>/evals/<name>/eval.json (the run's config,
 * or the request's, with its episodes), the val shards go to the evaluation's folder, writeEvalResult
 * stores result.json. The checkpoint's step picks the val seeds as in training, so evaluating a run's
 * final checkpoint plays the states of its final validation (with fixed_states, of every validation).
 * @throws the activities' failures (ConfigError for bad episodes or a missing run.json) */
export async function starpoEvaluation(request: EvalRequest): Promise<EvalResult> {
  const progress: EvalProgress = {
    runId: request.runId,
    name: request.name,
    step: request.step,
    phase: 'preparing',
    shards: 0,
    shardsDone: 0,
    episodes: 0,
  };
  setHandler(evalProgressQuery, () => progress);
  const show = () => setCurrentDetails(detailsLine(progress));
  show();
  const spec = await activityProxies().rollout.prepareEval.executeWithOptions({ summary: `eval.json of ${request.name}` }, [request]);
  const shards = planShards(spec.config, 'val', request.step);
  const { rollout } = activityProxies(spec.config);
  Object.assign(progress, { phase: 'validation', episodes: spec.config.val_batch_size, shards: shards.length });
  show();
  const sums = await playValidation({
    runId: request.runId,
    step: request.step,
    policy: request.checkpoint,
    shards,
    config: spec.config,
    evalName: request.name,
    onShard: (done) => {
      progress.shardsDone = done;
      show();
    },
  });
  const result = evalResult(spec, sums);
  await rollout.writeEvalResult.executeWithOptions({ summary: `result.json of ${request.name}` }, [result]);
  progress.phase = 'done';
  show();
  return result;
}
