/**
 * Soak: N consecutive StarPO steps in one process (rollout of the step's groups with the current policy, then
 * the update), checking that nothing hangs, nothing turns NaN and the live tensor count does not grow.
 *
 *   node --import tsx bench/soak.ts [config.yaml] [steps] [overrides...]   (default test/fixtures/tiny_frozen_lake.yaml, 1000)
 */
import * as tf from '@tensorflow/tfjs';
import { reportProgress, startWatchdog } from '../src/activities/watchdog';
import { AdamW } from '../src/algo/adamw';
import { klControllerFromConfig } from '../src/algo/kl';
import { sftTrain, warmupSchedule } from '../src/algo/sft';
import { ppoUpdate } from '../src/algo/update';
import { gradientCheckpointing } from '../src/contract';
import { initBackend } from '../src/model/backend';
import { tinyPreset } from '../src/model/config';
import { Qwen2 } from '../src/model/qwen2';
import { charTokenizer } from '../src/model/tokenizer';
import { loadConfigFile } from '../src/preflight/load';
import { warmupDemonstrations } from '../src/rollout/demonstrations';
import { runGroups } from '../src/rollout/manager';
import { generatingArgsOf, planShards } from '../src/rollout/plan';
import { modelPolicy } from '../src/rollout/policy';

const EVERY = 50;

/**
 * The steps run after the config's warm-up with no servers (the rollout and update code of the activities,
 * without Temporal and the store), under the activity watchdog (activities/watchdog.ts, watchdog_seconds of
 * the config), which ends the process if a step stops making progress. Every step: actor/pg_loss,
 * actor/grad_norm finite and no actor/skipped_nonfinite; every 50 steps: every weight finite, and
 * tf.memory().numTensors printed with its change since step 1 (step 0 creates the optimizer state and the kept
 * weight transposes). Exits 1 on a failure.
 */
async function main(): Promise<void> {
  await initBackend();
  const [file = 'test/fixtures/tiny_frozen_lake.yaml', stepsArg = '1000', ...overrides] = process.argv.slice(2);
  const steps = Number(stepsArg);
  const { config } = loadConfigFile(file, [`max_steps=${steps}`, ...overrides]);
  const tokenizer = charTokenizer();
  const actor = Qwen2.random(tinyPreset(tokenizer.vocabSize, config.config_overrides), config.seed);
  const optimizer = new AdamW({ weightDecay: config.actor_train.training_args.weight_decay });
  const klController = klControllerFromConfig(config);
  const generating = generatingArgsOf(config, 'train');
  // The config's warm-up first (as prepareRun does), so the policy answers in format and the groups' scores differ.
  const w = config.warmup;
  if (w.type !== 'none') {
    const demos = await warmupDemonstrations(config, tokenizer);
    const sftOptimizer = new AdamW({});
    const { finalLoss } = await sftTrain({
      model: actor,
      optimizer: sftOptimizer,
      trajectories: demos.episodes,
      steps: w.train_steps,
      batchSize: w.batch_size,
      microBatchSize: config.actor_train.training_args.per_device_train_batch_size,
      gradientCheckpointing: gradientCheckpointing(config.actor_train),
      lr: warmupSchedule(w),
      maxGradNorm: config.max_grad_norm,
      seed: config.seed,
      padId: tokenizer.padId,
    });
    sftOptimizer.dispose();
    console.log(`warm-up (${w.type}): ${w.train_steps} SFT steps on ${demos.episodes.length} episodes, final loss ${finalLoss.toFixed(3)}`);
  }
  const lr = config.actor_train.training_args.learning_rate;
  const failures: string[] = [];
  let base = 0;
  let maxDelta = 0;
  const started = performance.now();
  const soak = async () => {
    for (let step = 0; step < steps; step++) {
      const trajectories = [];
      for (const groups of planShards(config, 'train', step)) {
        const played = await runGroups(groups, {
          policy: modelPolicy(actor, tokenizer, generating),
          tokenizer,
          customEnvs: config.custom_envs,
          sequenceLength: config.sequence_length,
          maxNewTokens: generating.max_new_tokens,
          split: 'train',
          step,
          groupSize: config.train_env_manager.group_size,
          redundancy: config.train_env_manager.group_size_redundancy,
          onTurn: async () => reportProgress(),
        });
        trajectories.push(...played.trajectories);
      }
      const { metrics } = await ppoUpdate({
        actor: { model: actor, optimizer, lr: () => lr },
        klController,
        trajectories,
        config,
        step,
        padId: tokenizer.padId,
        afterMicroBatch: async () => reportProgress(),
      });
      for (const k of ['actor/pg_loss', 'actor/grad_norm'])
        if (k in metrics && !Number.isFinite(metrics[k])) failures.push(`step ${step}: ${k} = ${metrics[k]}`);
      if (metrics['actor/skipped_nonfinite'] > 0) failures.push(`step ${step}: a non-finite loss or gradient skipped the optimizer step`);
      const tensors = tf.memory().numTensors;
      if (step === 1) base = tensors;
      if (step > 1) maxDelta = Math.max(maxDelta, tensors - base);
      if (step % EVERY === 0 || step === steps - 1) {
        const finite = [...actor.trainableVariables().values()].every((v) => tf.tidy(() => tf.all(tf.isFinite(v)).dataSync()[0] === 1));
        if (!finite) failures.push(`step ${step}: a weight is not finite`);
        const s = (performance.now() - started) / 1000;
        console.log(
          `step ${step}: numTensors ${tensors}${step > 1 ? ` (${tensors - base >= 0 ? '+' : ''}${tensors - base} since step 1)` : ''}, ` +
            `pg_loss ${metrics['actor/pg_loss']?.toFixed(4)}, grad_norm ${metrics['actor/grad_norm']?.toFixed(3)}, success ${(trajectories.filter((t) => t.success).length / trajectories.length).toFixed(2)}, ` +
            `weights finite ${finite}, ${s.toFixed(0)} s (${(s / (step + 1)).toFixed(2)} s/step)`,
        );
      }
      reportProgress();
    }
  };
  // Runs the loop as one watched "activity": the watchdog ends the process when a step stops making progress.
  const watched = startWatchdog(config.watchdog_seconds)({} as never).inbound!;
  await watched.execute!({ args: [], headers: {} }, soak);
  console.log(
    `${steps} steps in ${((performance.now() - started) / 1000).toFixed(0)} s: no hang (watchdog_seconds ${config.watchdog_seconds}), ` +
      `${failures.length === 0 ? 'no NaN' : `${failures.length} failures`}, numTensors max change after step 1: ${maxDelta >= 0 ? '+' : ''}${maxDelta}`,
  );
  for (const f of failures) console.log(`FAIL ${f}`);
  actor.dispose();
  process.exit(failures.length === 0 && maxDelta <= 0 ? 0 : 1);
}

void main();
