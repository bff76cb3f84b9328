/**
 * Activity `update` (task queue "starpo-update"): one StarPO update (algo/update.ts ppoUpdate) on a step's
 * trajectories, then the checkpoint of step N+1 (weights, optimizer, critic, trainer state, trajectory_scores.json)
 * and latest.json. Idempotent: an attempt whose checkpoint already verifies returns it instead of training again.
 */
import { log } from '@temporalio/activity';
import { AdamW } from '../algo/adamw';
import { klControllerFromConfig } from '../algo/kl';
import { lrAt } from '../algo/lr_schedule';
import { criticStepsPerUpdate, needsReference, optimizerStepsPerUpdate, ppoUpdate } from '../algo/update';
import { frozenBy, type ObjectRef, type RunConfig, type UpdateInput, type UpdateOutput } from '../contract';
import { backendInfo } from '../model/backend';
import type { Qwen2 } from '../model/qwen2';
import { ValueModel } from '../model/value_model';
import { readCheckpoint, readOptimizerFiles, verifyOnlySafetensors, writeLatest } from '../storage/checkpoint';
import { isUnusable } from '../storage/errors';
import { checkpointPrefix, TRAJECTORY_SCORES_NAME } from '../storage/keys';
import {
  disposeCheckpoint,
  dropOldCheckpointData,
  type PolicyCheckpoint,
  saveCheckpoint,
  trainerStateOf,
} from '../storage/policy_checkpoint';
import { readTrajectories, takePolicy } from '../workflows/fallback';
import { type ActivityRuntime, heartbeat } from './runtime';

type TrainingArgs = RunConfig['critic']['training_args']; // the optimizer keys (actor_train's training_args has them too)

const betasOf = (a: TrainingArgs): [number, number] => [a.adam_beta1, a.adam_beta2];
const newAdamW = (a: TrainingArgs) => new AdamW({ betas: betasOf(a), eps: 1e-8, weightDecay: a.weight_decay });
/** The lr of optimizer step k of pipeline step `step`'s update; the schedule counts optimizer steps (ROLL). */
const lrOf = (a: TrainingArgs, config: RunConfig, step: number, perUpdate: number) => (k: number) =>
  lrAt(
    { base: a.learning_rate, type: a.lr_scheduler_type, warmupSteps: a.warmup_steps, totalSteps: config.max_steps * perUpdate },
    step * perUpdate + k,
  );

/** The output of an update whose checkpoint manifest exists at `manifestKey` and verifies, else null (logging why not). */
async function completedUpdate(rt: ActivityRuntime, manifestKey: string): Promise<UpdateOutput | null> {
  try {
    const checkpoint = await rt.existing(manifestKey);
    if (!checkpoint) return null;
    // Verified on the stream, the weights and optimizer state are not kept: this process may not hold them twice.
    const state = trainerStateOf((await readCheckpoint(rt.store, checkpoint, verifyOnlySafetensors)).files);
    await readOptimizerFiles(rt.store, manifestKey, verifyOnlySafetensors); // what the next update continues from
    return {
      checkpoint,
      metrics: state.metrics,
      skipReason: state.skipReason ?? null,
      ...(state.compute ? { compute: state.compute } : {}),
    };
  } catch (err) {
    if (!isUnusable(err)) throw err;
    log.warn(`the stored result of this update is not usable: ${err.message}; training the update again`);
    return null;
  }
}

/**
 * The frozen reference policy of the KL terms: a LoRA model's own base weights (its base view: no second copy),
 * else the run's step-0 policy, which at step 0 is this very checkpoint (ppoUpdate reads it before any optimizer
 * step; `stored` null), later loaded once per process.
 */
async function referenceOf(rt: ActivityRuntime, checkpoint: PolicyCheckpoint, stored: ObjectRef | null): Promise<Qwen2> {
  if (checkpoint.model.adapters()) return checkpoint.model.baseView();
  return stored ? rt.reference(stored) : checkpoint.model;
}

/**
 * Builds the update activity over a runtime. A retried or replayed attempt whose checkpoint has a manifest whose
 * objects verify returns it (and points latest.json at it); a damaged one is trained again, rewriting identical
 * objects (the update is deterministic). A corrupt policy checkpoint or trajectory shard ends the attempt with a
 * CheckpointCorruptError naming where the run continues from (workflows/fallback.ts). When the StarPO-S filter keeps nothing
 * (docs/numerics.md §7), the new checkpoint holds the unchanged weights and the reason. trajectory_scores.json is
 * written with the other files before the manifest, so a reused checkpoint carries it too.
 */
export function updateActivity(rt: ActivityRuntime) {
  return async function update(input: UpdateInput): Promise<UpdateOutput> {
    const started = performance.now();
    const { config } = await rt.run(input.runId);
    const prefix = checkpointPrefix(input.runId, input.step + 1);
    const done = await completedUpdate(rt, `${prefix}manifest.json`);
    if (done) {
      await writeLatest(rt.store, input.runId, done.checkpoint, input.step + 1);
      await dropOldCheckpointData(rt.store, input.runId, input.step + 1, config, (line) => log.info(line));
      return done;
    }
    const trajectories = await readTrajectories(rt, input);
    const actorArgs = config.actor_train.training_args;
    const criticArgs = config.critic.training_args;
    const gae = config.adv_estimator === 'gae';
    const checkpoint = await takePolicy(rt, input.runId, input.step, input.policy, true);
    // The step-0 checkpoint carries no reference: it is the reference. A LoRA run's is its base (the adapters off).
    const reference = checkpoint.state.base ?? checkpoint.state.reference ?? input.policy;
    let ref: ObjectRef;
    let result: Awaited<ReturnType<typeof ppoUpdate>>;
    try {
      checkpoint.model.freeze(frozenBy(config.actor_train.model_args));
      checkpoint.optimizer ??= newAdamW(actorArgs);
      if (gae) {
        checkpoint.critic ??= ValueModel.fromPolicy(checkpoint.model);
        checkpoint.criticOptimizer ??= newAdamW(criticArgs);
      }
      const klController = klControllerFromConfig(config, checkpoint.state.klCoef);
      result = await ppoUpdate({
        actor: {
          model: checkpoint.model,
          optimizer: checkpoint.optimizer,
          lr: lrOf(actorArgs, config, input.step, optimizerStepsPerUpdate(config)),
        },
        critic: gae
          ? {
              model: checkpoint.critic!,
              optimizer: checkpoint.criticOptimizer!,
              lr: lrOf(criticArgs, config, input.step, criticStepsPerUpdate(config)),
            }
          : null,
        reference: needsReference(config) ? await referenceOf(rt, checkpoint, reference === input.policy ? null : reference) : null,
        klController,
        trajectories,
        config,
        step: input.step,
        padId: checkpoint.tokenizer.padId,
        afterMicroBatch: () => heartbeat({ step: input.step }),
      });
      result.metrics['time/update'] = (performance.now() - started) / 1000;
      checkpoint.state = {
        step: input.step + 1,
        betas: betasOf(actorArgs),
        weightDecay: actorArgs.weight_decay,
        metrics: result.metrics,
        criticOptimizer: gae ? { betas: betasOf(criticArgs), weightDecay: criticArgs.weight_decay } : undefined,
        klCoef: klController.value,
        reference,
        base: checkpoint.state.base,
        skipReason: result.skipReason ?? undefined,
        compute: backendInfo(),
      };
      const scores = new TextEncoder().encode(JSON.stringify(result.scores));
      ref = await saveCheckpoint(rt.store, prefix, checkpoint, { [TRAJECTORY_SCORES_NAME]: scores });
    } catch (err) {
      // The weights may be half-updated: drop them; a retry reloads the checkpoint from the store.
      disposeCheckpoint(checkpoint);
      throw err;
    }
    await writeLatest(rt.store, input.runId, ref, input.step + 1);
    rt.keep(ref, checkpoint);
    await dropOldCheckpointData(rt.store, input.runId, input.step + 1, config, (line) => log.info(line));
    return { checkpoint: ref, metrics: result.metrics, skipReason: result.skipReason, compute: checkpoint.state.compute };
  };
}
