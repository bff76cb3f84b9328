/**
 * Workflow `starpoTraining` (task queue "starpo"): the StarPO loop of docs/numerics.md §1. Per step: validation
 * when due, the train rollouts (one activity per shard of env groups, train_rollouts.ts), one update
 * that writes the next checkpoint, the step's metrics. Beside it: pause/stop (control.ts), async
 * rollouts (train_rollouts.ts), continue-as-new (continue_as_new.ts). Deterministic, no I/O.
 */
import { ApplicationFailure, log, patched, upsertMemo, workflowInfo } from '@temporalio/workflow';
import type { RolloutOutput, UpdateOutput } from '../contract/activities';
import { trackersOf } from '../contract/enums';
import { CONFIG_ERROR, ENV_FAILURE } from '../contract/errors';
import type { RunSpec } from '../contract/run';
import type { ObjectRef } from '../contract/store';
import type { StarpoRunResult, StarpoWorkflowInput } from '../contract/workflow';
import { meanMetrics, mergeSums } from '../rollout/metrics';
import { planShards } from '../rollout/plan';
import { checkCollapse } from './collapse_guard';
import { continueDue, continueRun, loopStateOf } from './continue_as_new';
import { RunControl } from './control';
import { checkEarlyStop, freshEarlyStop } from './early_stop';
import { fallbackOf, MAX_REPLAYS_PER_OBJECT } from './fallback';
import { announce, enter, newProgress, recordStep, recordValidation, show, stepCompute } from './progress';
import { activityProxies } from './proxies';
import { Tracking } from './tracking';
import { TrainRollouts } from './train_rollouts';
import { playValidation } from './validation';
import { watchWorkers } from './worker_watch';

export { starpoEvaluation } from './evaluation';
export { starpoSweep } from './sweep';

/** The StarPO training loop; see the file comment. */
export async function starpoTraining(input: StarpoWorkflowInput): Promise<StarpoRunResult> {
  const { runId } = input;
  const carried = loopStateOf(input);
  const progress = newProgress(input, carried);
  if (workflowInfo().workflowId !== runId) {
    // The run id names the objects in the store; a mismatch would write into another run's folder.
    throw ApplicationFailure.nonRetryable(
      `runId ${JSON.stringify(runId)} must equal the workflow id ${JSON.stringify(workflowInfo().workflowId)}`,
      CONFIG_ERROR,
    );
  }
  // A new or restarted run brings its config; a continued run reads it back from run.json.
  let run: RunSpec | null = 'config' in input ? input : null;
  const control = new RunControl(progress, () => run?.config ?? null);
  // Histories recorded before the watch existed replay without its timers.
  if (patched('idle-queue-watch')) void watchWorkers(progress, runId);
  run ??= await activityProxies().update.loadRun.executeWithOptions({ summary: 'config from run.json (continued run)' }, [runId]);
  const { config, configName } = run;
  const { update } = activityProxies(config);
  // Histories recorded before tracking replay without its activities.
  const tracking = new Tracking(runId, progress, trackersOf(config).length > 0 && patched('trackers'));
  announce(progress, run);
  show(progress);

  let policy: ObjectRef;
  /** The warm-up's metrics (warmup/type_<type>, ...), written with the first step's. */
  let warmupMetrics: Record<string, number> = {};
  if (input.resumeFrom) policy = input.resumeFrom.checkpoint;
  else {
    const prepared = await update.prepareRun.executeWithOptions({ summary: 'warm-up (step-0 policy) and run.json' }, [
      { runId, configName, config },
    ]);
    policy = prepared.checkpoint;
    progress.lastMetrics = warmupMetrics = prepared.metrics;
  }
  progress.latestCheckpoint = policy;
  const rollouts = new TrainRollouts(runId, config, carried.policies ?? [{ step: progress.step, checkpoint: policy }]);
  show(progress);

  /** Validation with `policy` (new states every evaluation unless val_env_manager.fixed_states): val/ metrics. */
  const validate = async (step: number): Promise<Record<string, number>> => {
    enter(progress, 'validation');
    const metrics = meanMetrics(await playValidation({ runId, step, policy, config, shards: planShards(config, 'val', step) }), 'val/');
    recordValidation(progress, step, metrics);
    return metrics;
  };
  /** One step's validation (when due), train rollouts and update. */
  const playStep = async (step: number): Promise<PlayedStep> => {
    const valMetrics = config.eval_steps > 0 && step % config.eval_steps === 0 ? await validate(step) : {};
    enter(progress, 'rollout');
    const waitFrom = Date.now();
    const outs = await rollouts.take(step);
    const rolloutWait = (Date.now() - waitFrom) / 1000;
    if (outs.every((o) => !o.metrics.counts['env/success'])) {
      // the env pool dropped every group: a broken env, not something a retry fixes
      const first = outs.find((o) => o.firstEnvError)?.firstEnvError;
      throw ApplicationFailure.nonRetryable(
        `step ${step}: every env group failed, replacements included; ${first ? `the first: ${first}` : 'see the rollout worker log'}`,
        ENV_FAILURE,
      );
    }
    // r > 0: the next steps' rollouts play with this step's checkpoint while it is updated (none when pausing or stopping).
    if (!progress.paused && control.stopReason === null) rollouts.launchAhead(step, config.max_steps);
    enter(progress, 'update');
    const updated = await update.update.executeWithOptions({ summary: `update step ${step} -> checkpoint step ${step + 1}` }, [
      { runId, step, policy, trajectories: outs.map((o) => o.trajectories) },
    ]);
    return { valMetrics, outs, updated, rolloutWait };
  };

  /** Replays caused by each unusable object (a bound, so a damage that replays cannot loop forever). */
  const replays = new Map<string, number>();
  /** A corrupt or missing input: back to the newest complete checkpoint, to replay deterministically; else rethrows. */
  const fallBack = (err: unknown, step: number): void => {
    const fallback = fallbackOf(err);
    const seen = fallback ? (replays.get(fallback.object) ?? 0) + 1 : 0;
    if (!fallback || seen > MAX_REPLAYS_PER_OBJECT) throw err;
    replays.set(fallback.object, seen);
    log.warn(`step ${step}: ${fallback.reason}; replaying the run from step ${fallback.step} (${fallback.checkpoint.key})`);
    Object.assign(progress, { step: fallback.step, latestCheckpoint: fallback.checkpoint });
    policy = fallback.checkpoint;
    rollouts.reset(fallback.step, policy);
  };
  let { collapseStreak } = carried;
  /** collapse_guard (docs/numerics.md §7): marks the step's metrics and alerts or stops when the guard fires. */
  const guardCollapse = (step: number, metrics: Record<string, number>): void => {
    const verdict = checkCollapse(config.collapse_guard, metrics, collapseStreak);
    collapseStreak = verdict.streak;
    if (!verdict.fired) return;
    metrics['collapse/fired'] = 1;
    log.warn(`step ${step}: ${verdict.fired}`);
    upsertMemo({ collapseAlert: `step ${step}: ${verdict.fired}` });
    if (config.collapse_guard.action === 'stop') control.stop(verdict.fired);
  };

  let earlyStop = carried.earlyStop ?? freshEarlyStop();
  /** RAGEN-2's early stops (early_stop.ts): marks the step's metrics and stops the run when one fires. */
  const checkStops = (step: number, metrics: Record<string, number>): void => {
    const verdict = checkEarlyStop(config, metrics, earlyStop);
    earlyStop = verdict.state;
    if (!verdict.fired) return;
    metrics[verdict.fired.metric] = 1;
    log.warn(`step ${step}: early stop: ${verdict.fired.reason}`);
    control.stop(`early stop: ${verdict.fired.reason}`);
  };

  const firstStep = progress.step;
  while (progress.step < config.max_steps) {
    await control.waitWhilePaused();
    if (control.stopReason !== null) break;
    control.inStep = true;
    const step = progress.step;
    const started = Date.now();
    let played: PlayedStep;
    try {
      played = await playStep(step);
    } catch (err) {
      fallBack(err, step);
      control.inStep = false;
      continue;
    }
    const { outs, updated } = played;
    policy = updated.checkpoint;
    rollouts.addPolicy(step + 1, policy);
    if (updated.skipReason) log.warn(`step ${step}: update skipped: ${updated.skipReason}`);
    const seconds = (Date.now() - started) / 1000;
    const metrics = stepMetrics(played, warmupMetrics, seconds, rollouts.ratio > 0);
    warmupMetrics = {};
    if (metrics['env/failed_episodes'] > 0)
      log.warn(`step ${step}: ${metrics['env/failed_episodes']} env episodes failed (see the rollout worker log)`);
    guardCollapse(step, metrics);
    checkStops(step, metrics);
    const compute = stepCompute(outs, updated);
    await update.writeMetrics.executeWithOptions({ summary: `metrics step ${step}` }, [{ runId, step, metrics, compute }]);
    tracking.stored();
    recordStep(progress, step, { metrics, checkpoint: policy, seconds, compute });
    control.inStep = false;
    if (progress.step < config.max_steps && control.stopReason === null && continueDue(progress.step - firstStep)) {
      await tracking.settle();
      await continueRun(rollouts, () => ({
        runId,
        resumeFrom: { checkpoint: policy, step: progress.step },
        collapseStreak,
        earlyStop,
        paused: progress.paused,
        validationCurve: progress.validationCurve,
      }));
    }
  }
  control.close();
  await rollouts.settle(); // r > 0 and a stop: rollouts launched ahead end before the run does
  if (config.eval_steps > 0) {
    const valMetrics = await validate(progress.step);
    await update.writeMetrics.executeWithOptions({ summary: `metrics step ${progress.step} (final validation)` }, [
      { runId, step: progress.step, metrics: valMetrics },
    ]);
    tracking.stored();
  }
  await tracking.settle();
  enter(progress, 'done');
  return {
    runId,
    steps: progress.step,
    finalCheckpoint: policy,
    lastMetrics: progress.lastMetrics,
    lastValidation: progress.lastValidation,
    validationCurve: progress.validationCurve,
    stoppedBy: control.stopReason,
  };
}

/** What one step played: its validation metrics (when due), the rollout outputs, the update's output. */
interface PlayedStep {
  valMetrics: Record<string, number>;
  outs: RolloutOutput[];
  updated: UpdateOutput;
  /** Seconds the step waited for its train rollouts. */
  rolloutWait: number;
}

/** Every scalar of a step: the warm-up's (first step only), the rollouts', the update's, validation's and times. */
function stepMetrics(played: PlayedStep, warmupMetrics: Record<string, number>, seconds: number, async: boolean): Record<string, number> {
  const { outs, updated, valMetrics } = played;
  return {
    ...warmupMetrics,
    ...meanMetrics(mergeSums(outs.map((o) => o.metrics))),
    ...updated.metrics,
    ...valMetrics,
    'time/rollout': Math.max(...outs.map((o) => o.seconds)),
    'time/step': seconds,
    // r > 0: how long the step waited for rollouts that were launched during the previous update
    ...(async ? { 'time/rollout_wait': played.rolloutWait } : {}),
  };
}
