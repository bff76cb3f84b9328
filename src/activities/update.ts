/**
 * Activity `update` (task queue "starpo-update"): one StarPO update (SPEC.md §5-6) on a step's
 * trajectories, then a new checkpoint runs/<run>/checkpoints/step-(N+1)/ with optimizer and trainer
 * state, and latest.json. A retried attempt whose checkpoint already has a valid manifest returns
 * it instead of training again (the update is deterministic, so both would be identical).
 */
import { checkpointPrefix } from '../storage/keys';
import { readCheckpoint, writeLatest } from '../storage/manifest';
import { AdamW } from '../algo/adamw';
import { ppoUpdate } from '../algo/ppo_update';
import { lrAt } from '../algo/lr_schedule';
import type { Trajectory } from '../rollout/types';
import type { UpdateInput, UpdateOutput } from './types';
import { saveCheckpoint, trainerStateOf } from './checkpoint';
import { ActivityRuntime, heartbeat } from './runtime';

/** Builds the update activity over a runtime. */
export function updateActivity(rt: ActivityRuntime) {
  return async function update(input: UpdateInput): Promise<UpdateOutput> {
    const started = performance.now();
    const { config } = await rt.run(input.runId);
    const prefix = checkpointPrefix(input.runId, input.step + 1);
    const existing = await rt.existing(`${prefix}manifest.json`);
    if (existing) {
      const { files } = await readCheckpoint(rt.store, existing);
      return { checkpoint: existing, metrics: trainerStateOf(files).metrics };
    }
    const trajectories: Trajectory[] = [];
    for (const ref of input.trajectories) trajectories.push(...((await rt.store.getJsonlGz(ref)) as Trajectory[]));
    const args = config.actor_train.training_args;
    const betas: [number, number] = [args.adam_beta1, args.adam_beta2];
    const checkpoint = await rt.take(input.policy);
    checkpoint.optimizer ??= new AdamW({ betas, eps: 1e-8, weightDecay: args.weight_decay });
    const lr = lrAt({ base: args.learning_rate, type: args.lr_scheduler_type, warmupSteps: args.warmup_steps, totalSteps: config.max_steps }, input.step);
    let metrics: Record<string, number>;
    let ref;
    try {
      metrics = await ppoUpdate({
        model: checkpoint.model, optimizer: checkpoint.optimizer, trajectories, config, step: input.step,
        padId: checkpoint.tokenizer.padId, lr, afterMicroBatch: () => heartbeat({ step: input.step }),
      });
      metrics['time/update'] = (performance.now() - started) / 1000;
      checkpoint.state = { step: input.step + 1, betas, weightDecay: args.weight_decay, metrics };
      ref = await saveCheckpoint(rt.store, prefix, checkpoint);
    } catch (err) {
      // The weights may be half-updated: drop them; a retry reloads the checkpoint from the store.
      checkpoint.model.dispose();
      checkpoint.optimizer.dispose();
      throw err;
    }
    await writeLatest(rt.store, input.runId, ref, input.step + 1);
    rt.keep(ref, checkpoint);
    return { checkpoint: ref, metrics };
  };
}
