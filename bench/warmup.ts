/**
 * The config's warm-up in one process (no servers): SFT on its demonstrations (warmup.type format or
 * solver), printing the loss curve, seconds per optimizer step, and the answer validity and success of
 * the warmed-up model on the held-out validation maps (val_batch_size episodes) under the config's
 * train and validation generating_args and two alternatives; with --every N, also the held-out success
 * every N SFT steps (the warm-up curve).
 *
 *   npx tsx bench/warmup.ts [configs/frozen_lake.yaml] [--every N] [key=value overrides, e.g. warmup.train_steps=300]
 */

import { AdamW } from '../src/algo/adamw';
import { sftTrain, warmupSchedule } from '../src/algo/sft';
import type { GeneratingArgs, RunConfig } from '../src/contract';
import { gradientCheckpointing } from '../src/contract';
import { initBackend } from '../src/model/backend';
import { tinyPreset } from '../src/model/config';
import { Qwen2 } from '../src/model/qwen2';
import { charTokenizer } from '../src/model/tokenizer';
import { loadConfigFile } from '../src/preflight/load';
import { warmupDemonstrations } from '../src/rollout/demonstrations';
import { runEpisodes } from '../src/rollout/manager';
import { planShards } from '../src/rollout/plan';
import { modelPolicy } from '../src/rollout/policy';
import { deriveSeed } from '../src/util/rng';

/** Plays the held-out validation maps once with `gen`: answer validity, success, turns per episode. */
async function heldOut(config: RunConfig, model: Qwen2, gen: GeneratingArgs): Promise<string> {
  const tokenizer = charTokenizer();
  const specs = planShards(config, 'val', 0)
    .flat()
    .map((g, i) => ({ ...g, envId: i, rngParts: [1, i] }));
  const t0 = performance.now();
  const trajs = await runEpisodes(specs, {
    policy: modelPolicy(model, tokenizer, gen),
    tokenizer,
    customEnvs: config.custom_envs,
    sequenceLength: config.sequence_length,
    maxNewTokens: gen.max_new_tokens,
    split: 'val',
    step: 0,
  });
  const turns = trajs.flatMap((t) => t.turns);
  return (
    `validity ${(turns.filter((u) => u.actionIsValid).length / turns.length).toFixed(3)}, ` +
    `success ${(trajs.filter((t) => t.success).length / trajs.length).toFixed(3)} of ${trajs.length}, ${(turns.length / trajs.length).toFixed(1)} turns/episode, ${((performance.now() - t0) / 1000).toFixed(1)} s`
  );
}

async function main(): Promise<void> {
  const args = process.argv.slice(3);
  const everyAt = args.indexOf('--every');
  const every = everyAt >= 0 ? Number(args.splice(everyAt, 2)[1]) : 0;
  const { config } = loadConfigFile(process.argv[2] ?? 'configs/frozen_lake.yaml', args);
  console.log(`backend ${await initBackend()}`);
  const tokenizer = charTokenizer();
  let t0 = performance.now();
  const { episodes } = await warmupDemonstrations(config, tokenizer);
  const tokens = episodes.reduce((a, t) => a + t.inputIds.length, 0);
  console.log(
    `${config.warmup.type} demonstrations: ${episodes.length} episodes, ${(tokens / episodes.length).toFixed(0)} tokens each, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize, config.config_overrides), deriveSeed(config.seed, 'init'));
  const valGen = { ...config.actor_infer.generating_args, ...config.val_env_manager.generating_args };
  t0 = performance.now();
  let evalSeconds = 0;
  const w = config.warmup;
  await sftTrain({
    model,
    optimizer: new AdamW({}),
    trajectories: episodes,
    steps: w.train_steps,
    batchSize: w.batch_size,
    microBatchSize: config.actor_train.training_args.per_device_train_batch_size,
    gradientCheckpointing: gradientCheckpointing(config.actor_train),
    lr: warmupSchedule(w),
    maxGradNorm: config.max_grad_norm,
    seed: config.seed,
    padId: tokenizer.padId,
    afterStep: async (step, loss) => {
      const n = step + 1;
      if (n % 25 === 0)
        console.log(
          `sft step ${n}: loss ${loss.toFixed(3)} nats/token, ${(((performance.now() - t0) / 1000 - evalSeconds) / n).toFixed(2)} s/step`,
        );
      if (every > 0 && n % every === 0 && n < w.train_steps) {
        const e0 = performance.now();
        console.log(`  held-out after ${n} steps: ${await heldOut(config, model, valGen)}`);
        evalSeconds += (performance.now() - e0) / 1000;
      }
    },
  });
  const settings: Array<[string, Record<string, unknown>]> = [
    ['train generating_args', {}],
    ['validation generating_args', config.val_env_manager.generating_args ?? {}],
    ['T=1 top_p=0.9', { temperature: 1, top_p: 0.9, top_k: 0, do_sample: true }],
    ['T=0.7 top_p=1', { temperature: 0.7, top_p: 1, top_k: 0, do_sample: true }],
  ];
  for (const [name, override] of settings) {
    const gen = { ...config.actor_infer.generating_args, ...override };
    console.log(`${name} (T=${gen.temperature}, top_p=${gen.top_p}, sample=${gen.do_sample}): ${await heldOut(config, model, gen)}`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
