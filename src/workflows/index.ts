/**
 * Workflow `starpoTraining` (task queue "starpo"): the StarPO loop of SPEC.md §1 as a durable
 * Temporal workflow. Per step: validation when due, rollout activities (one per shard of env groups)
 * on "starpo-rollout", then one update activity on "starpo-update" that writes the next checkpoint.
 * With async_generation_ratio r > 0 the next r steps' rollouts run during the update, with the
 * newest checkpoint (train_rollouts.ts).
 * Every STEPS_PER_RUN steps (or when the server suggests it) the run continues as new with only the
 * run id, the checkpoint and the loop's small state (api.ts StarpoContinuation). `pause`, `unpause`
 * and `stop` act between steps (control.ts).
 * Deterministic, no I/O: only object references and scalar metrics pass through here.
 */
import {
  ApplicationFailure, continueAsNew, log, setCurrentDetails, upsertMemo, upsertSearchAttributes, workflowInfo,
} from '@temporalio/workflow';
import type { ObjectRef, RolloutOutput, UpdateOutput } from '../activities/types';
import type { StoredRun } from '../activities/runtime';
import { planShards } from '../rollout/plan';
import { meanMetrics, mergeSums } from '../rollout/metrics';
import {
  Progress, SEARCH_ATTRIBUTE_KEYS, StarpoContinuation, StarpoWorkflowInput, STEPS_PER_RUN,
} from './api';
import { checkCollapse } from './collapse_guard';
import { RunControl } from './control';
import { stepCompute } from './compute';
import { currentDetails } from './format';
import { fallbackOf, MAX_REPLAYS_PER_OBJECT } from './fallback';
import { update } from './proxies';
import { TrainRollouts } from './train_rollouts';
import { playValidation } from './validation';

export { starpoEvaluation } from './evaluation';

/** Result of a finished run. */
export interface StarpoRunResult {
  runId: string;
  steps: number;
  finalCheckpoint: ObjectRef;
  lastMetrics: Record<string, number>;
  lastValidation: Progress['lastValidation'];
  validationCurve: Progress['validationCurve'];
  /** Why the run ended before max_steps: "stop: <reason>" / "stop requested" (`stop`) or collapse_guard's message; else null. */
  stoppedBy: string | null;
}

/** The StarPO training loop; see the file comment. */
export async function starpoTraining(input: StarpoWorkflowInput): Promise<StarpoRunResult> {
  const { runId } = input;
  // A new or restarted run brings its config; a continued run brings its loop state and reads the config back (loadRun).
  const carried: Omit<StarpoContinuation, 'runId' | 'resumeFrom'> = 'config' in input
    ? { collapseStreak: 0, paused: false, validationCurve: [] }
    : input;
  const progress: Progress = {
    runId, step: input.resumeFrom?.step ?? 0, maxSteps: 0, phase: 'preparing', paused: carried.paused, stopRequested: null,
    lastMetrics: {}, lastValidation: null, validationCurve: [...carried.validationCurve], latestCheckpoint: input.resumeFrom?.checkpoint ?? null,
    secondsPerStep: null, compute: null,
  };
  if (workflowInfo().workflowId !== runId) {
    // The run id names the objects in the store; a mismatch would write into another run's folder.
    throw ApplicationFailure.nonRetryable(`runId ${JSON.stringify(runId)} must equal the workflow id ${JSON.stringify(workflowInfo().workflowId)}`, 'ConfigError');
  }
  let run: StoredRun | null = 'config' in input ? input : null;
  const control = new RunControl(progress, () => run?.config ?? null);
  run ??= await update.loadRun.executeWithOptions({ summary: 'config from run.json (continued run)' }, [runId]);
  const { config, configName } = run;
  progress.maxSteps = config.max_steps;
  const lastVal = progress.validationCurve.at(-1);
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTE_KEYS.runId, value: runId },
    { key: SEARCH_ATTRIBUTE_KEYS.config, value: configName },
    { key: SEARCH_ATTRIBUTE_KEYS.step, value: progress.step },
    ...(lastVal ? [{ key: SEARCH_ATTRIBUTE_KEYS.valSuccess, value: lastVal.success }] : []),
  ]);
  upsertMemo({
    report: `starpo report ${runId}`, tags: config.train_env_manager.tags.join(','), model: config.pretrain, maxSteps: config.max_steps, paused: progress.paused,
  });
  /** The UI's current details (step, phase, train/val success, s/step), refreshed whenever one changes. */
  const show = () => setCurrentDetails(currentDetails(progress));
  const enter = (phase: Progress['phase']) => {
    progress.phase = phase;
    show();
  };
  show();

  let policy: ObjectRef;
  /** The warm-up's metrics (warmup/type_<type>, ...), written with the first step's. */
  let warmupMetrics: Record<string, number> = {};
  if (input.resumeFrom) policy = input.resumeFrom.checkpoint;
  else {
    const prepared = await update.prepareRun.executeWithOptions({ summary: 'warm-up (step-0 policy) and run.json' }, [{ runId, configName, config }]);
    policy = prepared.checkpoint;
    progress.lastMetrics = warmupMetrics = prepared.metrics;
  }
  progress.latestCheckpoint = policy;
  const rollouts = new TrainRollouts(runId, config, carried.policies ?? [{ step: progress.step, checkpoint: policy }]);
  show();
  /**
   * Plays the validation groups with `policy` (new states every evaluation unless
   * val_env_manager.fixed_states; plan.ts); returns val/ metrics, val/{tag}/score and val/score over
   * per-group mean scores included (metrics.ts).
   */
  const validate = async (step: number): Promise<Record<string, number>> => {
    enter('validation');
    const metrics = meanMetrics(await playValidation({ runId, step, policy, shards: planShards(config, 'val', step) }), 'val/');
    progress.lastValidation = { step, metrics };
    const success = metrics['val/env/success'];
    if (success !== undefined) {
      progress.validationCurve.push({ step, success });
      upsertSearchAttributes([{ key: SEARCH_ATTRIBUTE_KEYS.valSuccess, value: success }]);
    }
    return metrics;
  };
  const evalDue = (step: number) => config.eval_steps > 0 && step % config.eval_steps === 0;

  const firstStep = progress.step;
  let { collapseStreak } = carried;
  /** Replays caused by each unusable object (a bound, so a damage that replays cannot loop forever). */
  const replays = new Map<string, number>();
  while (progress.step < config.max_steps) {
    await control.waitWhilePaused();
    if (control.stopReason !== null) break;
    control.inStep = true;
    const step = progress.step;
    const started = Date.now();
    let valMetrics: Record<string, number>, outs: RolloutOutput[], updated: UpdateOutput, rolloutWait = 0;
    try {
      valMetrics = evalDue(step) ? await validate(step) : {};
      enter('rollout');
      const waitFrom = Date.now();
      outs = await rollouts.take(step);
      rolloutWait = (Date.now() - waitFrom) / 1000;
      if (outs.every((o) => !o.metrics.counts['env/success'])) {
        // the env pool dropped every group: a broken env, not something a retry fixes
        throw ApplicationFailure.nonRetryable(`step ${step}: every env group failed, replacements included; see the rollout worker log`, 'EnvFailure');
      }
      // r > 0: the next steps' rollouts play with this step's checkpoint while it is updated (none when pausing or stopping).
      if (!progress.paused && control.stopReason === null) rollouts.launchAhead(step, config.max_steps);
      enter('update');
      updated = await update.update.executeWithOptions({ summary: `update step ${step} -> checkpoint step ${step + 1}` }, [{ runId, step, policy, trajectories: outs.map((o) => o.trajectories) }]);
    } catch (err) {
      // A corrupt or missing object: replay deterministically from the newest complete checkpoint.
      const fallback = fallbackOf(err);
      const seen = fallback ? (replays.get(fallback.object) ?? 0) + 1 : 0;
      if (!fallback || seen > MAX_REPLAYS_PER_OBJECT) throw err;
      replays.set(fallback.object, seen);
      log.warn(`step ${step}: ${fallback.reason}; replaying the run from step ${fallback.step} (${fallback.checkpoint.key})`);
      Object.assign(progress, { step: fallback.step, latestCheckpoint: fallback.checkpoint });
      policy = fallback.checkpoint;
      rollouts.reset(fallback.step, policy);
      control.inStep = false;
      continue;
    }
    const rolloutSeconds = Math.max(...outs.map((o) => o.seconds));
    policy = updated.checkpoint;
    rollouts.addPolicy(step + 1, policy);
    if (updated.skipReason) log.warn(`step ${step}: update skipped: ${updated.skipReason}`);
    const seconds = (Date.now() - started) / 1000;
    const metrics: Record<string, number> = {
      ...warmupMetrics, ...meanMetrics(mergeSums(outs.map((o) => o.metrics))), ...updated.metrics, ...valMetrics,
      'time/rollout': rolloutSeconds, 'time/step': seconds,
      // r > 0: how long the step waited for rollouts that were launched during the previous update
      ...(rollouts.ratio > 0 ? { 'time/rollout_wait': rolloutWait } : {}),
    };
    warmupMetrics = {};
    if (metrics['env/failed_episodes'] > 0) log.warn(`step ${step}: ${metrics['env/failed_episodes']} env episodes failed (see the rollout worker log)`);
    const verdict = checkCollapse(config.collapse_guard, metrics, collapseStreak);
    collapseStreak = verdict.streak;
    if (verdict.fired) {
      metrics['collapse/fired'] = 1;
      log.warn(`step ${step}: ${verdict.fired}`);
      upsertMemo({ collapseAlert: `step ${step}: ${verdict.fired}` });
      if (config.collapse_guard.action === 'stop') control.stop(verdict.fired);
    }
    const compute = stepCompute(outs, updated);
    await update.writeMetrics.executeWithOptions({ summary: `metrics step ${step}` }, [{ runId, step, metrics, compute }]);
    Object.assign(progress, { step: step + 1, lastMetrics: metrics, latestCheckpoint: policy, secondsPerStep: seconds, compute });
    control.inStep = false;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTE_KEYS.step, value: step + 1 }]);
    show();
    const more = progress.step < config.max_steps && control.stopReason === null;
    if (more && (progress.step - firstStep >= STEPS_PER_RUN || workflowInfo().continueAsNewSuggested)) {
      // r > 0: the rollouts launched ahead finish (committed shards the next run reuses) and their checkpoints carry over.
      await rollouts.settle();
      const next: StarpoContinuation = {
        runId, resumeFrom: { checkpoint: policy, step: progress.step }, collapseStreak, paused: progress.paused, validationCurve: progress.validationCurve,
        ...(rollouts.ratio > 0 ? { policies: rollouts.known() } : {}),
      };
      await continueAsNew<typeof starpoTraining>(next);
    }
  }
  control.close();
  await rollouts.settle(); // r > 0 and a stop: rollouts launched ahead end before the run does
  if (config.eval_steps > 0) {
    const valMetrics = await validate(progress.step);
    await update.writeMetrics.executeWithOptions({ summary: `metrics step ${progress.step} (final validation)` }, [{ runId, step: progress.step, metrics: valMetrics }]);
  }
  enter('done');
  return {
    runId, steps: progress.step, finalCheckpoint: policy, lastMetrics: progress.lastMetrics,
    lastValidation: progress.lastValidation, validationCurve: progress.validationCurve, stoppedBy: control.stopReason,
  };
}
