/**
 * The format warm-up in one process (no servers): SFT on random-valid-action episodes, printing the
 * loss curve, seconds per optimizer step, and the answer validity and success of the warmed-up model
 * on 64 held-out episodes under the config's train and validation generating_args and two alternatives.
 *
 *   npx tsx bench/warmup.ts [configs/frozen_lake.yaml] [train_steps]
 */
import { loadConfigFile } from '../src/config/load';
import { initBackend } from '../src/model/backend';
import { charTokenizer } from '../src/model/tokenizer';
import { tinyPreset } from '../src/model/config';
import { Qwen2 } from '../src/model/qwen2';
import { AdamW } from '../src/algo/adamw';
import { sftTrain } from '../src/algo/sft';
import { formatDemonstrations } from '../src/rollout/demonstrations';
import { runEpisodes } from '../src/rollout/manager';
import { modelPolicy } from '../src/rollout/model_policy';
import { planShards } from '../src/rollout/plan';
import { deriveSeed } from '../src/util/rng';

async function main(): Promise<void> {
  const { config } = loadConfigFile(process.argv[2] ?? 'configs/frozen_lake.yaml');
  if (process.argv[3]) config.warmup.train_steps = Number(process.argv[3]);
  console.log(`backend ${await initBackend()}`);
  const tokenizer = charTokenizer();
  let t0 = performance.now();
  const episodes = await formatDemonstrations(config, tokenizer);
  const tokens = episodes.reduce((a, t) => a + t.inputIds.length, 0);
  console.log(`demonstrations: ${episodes.length} episodes, ${(tokens / episodes.length).toFixed(0)} tokens each, ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), deriveSeed(config.seed, 'init'));
  t0 = performance.now();
  const w = config.warmup;
  await sftTrain({
    model, optimizer: new AdamW({}), trajectories: episodes, steps: w.train_steps, batchSize: w.batch_size,
    microBatchSize: config.actor_train.training_args.per_device_train_batch_size, lr: w.learning_rate,
    maxGradNorm: config.max_grad_norm, seed: config.seed, padId: tokenizer.padId,
    afterStep: async (step, loss) => {
      if ((step + 1) % 25 === 0) console.log(`sft step ${step + 1}: loss ${loss.toFixed(3)} nats/token, ${((performance.now() - t0) / 1000 / (step + 1)).toFixed(2)} s/step`);
    },
  });
  const val = config.val_env_manager;
  const settings: Array<[string, Record<string, unknown>]> = [
    ['train generating_args', {}],
    ['validation generating_args', val.generating_args ?? {}],
    ['T=1 top_p=0.9', { temperature: 1, top_p: 0.9, top_k: 0, do_sample: true }],
    ['T=0.7 top_p=1', { temperature: 0.7, top_p: 1, top_k: 0, do_sample: true }],
  ];
  for (const [name, override] of settings) {
    const gen = { ...config.actor_infer.generating_args, ...override };
    const specs = planShards(config, 'val', 0).flat().slice(0, 64).map((g, i) => ({ ...g, envId: i, rngParts: [1, i] }));
    t0 = performance.now();
    const trajs = await runEpisodes(specs, {
      policy: modelPolicy(model, tokenizer, gen), tokenizer, customEnvs: config.custom_envs,
      sequenceLength: config.sequence_length, maxNewTokens: gen.max_new_tokens, split: 'val', step: 0,
    });
    const turns = trajs.flatMap((t) => t.turns);
    console.log(
      `${name} (T=${gen.temperature}, top_p=${gen.top_p}, sample=${gen.do_sample}): validity ${(turns.filter((u) => u.actionIsValid).length / turns.length).toFixed(3)}, ` +
        `success ${(trajs.filter((t) => t.success).length / trajs.length).toFixed(3)}, ${(turns.length / trajs.length).toFixed(1)} turns/episode, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
