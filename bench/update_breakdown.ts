/**
 * Compute efficiency of the tiny model on this machine: one StarPO update of a 128-trajectory FrozenLake batch
 * split into prepass / forward / backward / optimizer, and KV-cache generation of 64 rows, each with its model
 * FLOP/s next to this process's 256^3 matmul FLOP/s, and the padding of the length-bucketed micro-batches.
 *
 *   node --import tsx bench/update_breakdown.ts [config.yaml] [overrides...]
 */

import { loadavg } from 'node:os';
import { AdamW } from '../src/algo/adamw';
import { lengthBucketedMicroBatches, paddedLength } from '../src/algo/batch';
import { filterGroups } from '../src/algo/filter';
import { klControllerFromConfig } from '../src/algo/kl';
import { noGradPass } from '../src/algo/micro_batches';
import { needsReference, ppoUpdate } from '../src/algo/update';
import { initBackend } from '../src/model/backend';
import { tinyPreset } from '../src/model/config';
import { generate } from '../src/model/generate';
import { Qwen2 } from '../src/model/qwen2';
import { charTokenizer } from '../src/model/tokenizer';
import { ValueModel } from '../src/model/value_model';
import { loadConfigFile } from '../src/preflight/load';
import { formatDemonstrations } from '../src/rollout/demonstrations';
import { Rng } from '../src/util/rng';
import { cpuSecondsSince, decodeFlops, matmulGflops, modelFlops, paddingFraction } from './flops';

const BATCH = 128;
const GROUP = 8;
const GEN_ROWS = 64;
const GEN_TOKENS = 24;
/** The turn whose prompt the generation bench continues (rollouts generate one turn of all active episodes at once). */
const GEN_TURN = 2;

/**
 * The batch is 128 format-demonstration episodes (random valid actions, as the warm-up plays them), in 16
 * groups of 8 with their real episode scores; the policy is a random init (its speed does not depend on its
 * weights). The config (default configs/frozen_lake.yaml, one optimizer step per update) picks the algorithm.
 * Model FLOPs (flops.ts modelFlops) count the real tokens only and causal attention as the lower triangle. The
 * table divides by wall time; the last line by this process's CPU time (tfjs wasm runs on one thread), which
 * stays comparable while other processes load the machine.
 * Generation: 64 contexts cut from the episodes at the start of their third answer (or their last), as a rollout
 * generates one turn of its active episodes (left-padded into one prefill), 24 new tokens each, no stop ids
 * (every row decodes all 24).
 */
async function main(): Promise<void> {
  const backend = await initBackend();
  const [file = 'configs/frozen_lake.yaml', ...overrides] = process.argv.slice(2);
  const { config } = loadConfigFile(file, [
    `rollout_batch_size=${BATCH}`,
    `train_env_manager.num_env_groups=${BATCH / GROUP}`,
    `train_env_manager.group_size=${GROUP}`,
    `train_env_manager.num_groups_partition=[${BATCH / GROUP}]`,
    `++warmup.num_episodes=${BATCH}`,
    `actor_train.training_args.gradient_accumulation_steps=${BATCH / 8}`,
    'actor_train.training_args.per_device_train_batch_size=8',
    ...overrides,
  ]);
  const tokenizer = charTokenizer();
  const demos = await formatDemonstrations(config, tokenizer);
  const trajectories = demos.map((t, i) => ({ ...t, trajGroupId: `FrozenLake_${Math.floor(i / GROUP)}_0_0` }));
  const cfg = tinyPreset(tokenizer.vocabSize);
  const actor = Qwen2.random(cfg, 1);
  const critic = config.adv_estimator === 'gae' ? ValueModel.fromPolicy(actor) : null;
  const reference = needsReference(config) ? Qwen2.fromNamedTensors(cfg, actor.toNamedTensors()) : null;
  const micro = config.actor_train.training_args.per_device_train_batch_size;

  const run = () =>
    ppoUpdate({
      actor: { model: actor, optimizer: new AdamW({}), lr: () => 1e-4 },
      critic: critic ? { model: critic, optimizer: new AdamW({}), lr: () => 1e-4 } : null,
      reference,
      klController: klControllerFromConfig(config),
      trajectories,
      config,
      step: 0,
      padId: tokenizer.padId,
    });
  await run(); // warm-up: kernel compilation and first allocations
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  const { metrics } = await run();
  const updateCpu = cpuSecondsSince(cpu0);
  const wall = (performance.now() - started) / 1000;

  // The no-gradient pass over the whole batch (old log-probs), timed on its own: this config's update may skip it.
  const t0 = performance.now();
  await noGradPass({
    actor,
    trajectories,
    T: paddedLength(trajectories) - 1,
    padId: tokenizer.padId,
    microSize: micro,
    oldLogp: true,
    klPenalty: config.kl_penalty,
  });
  const prepassSeconds = (performance.now() - t0) / 1000;

  // Generation: contexts up to the start of each episode's last answer.
  const contexts = trajectories.slice(0, GEN_ROWS).map((t) => t.inputIds.slice(0, answerStart(t.responseMask, GEN_TURN)));
  const genOpts = () => ({
    maxNewTokens: GEN_TOKENS,
    temperature: 1,
    stopIds: [] as number[],
    rngs: contexts.map((_, i) => new Rng(2, i)),
  });
  generate(actor, contexts, genOpts()); // warm-up
  const g0 = performance.now();
  const gc0 = process.cpuUsage();
  generate(actor, contexts, genOpts());
  const genCpu = cpuSecondsSince(gc0);
  const genSeconds = (performance.now() - g0) / 1000;
  const mm = matmulGflops();

  // The trained trajectories: those the StarPO-S filter keeps, one minibatch per epoch in these configs.
  const { keep } = filterGroups({
    scores: trajectories.map((t) => t.episodeScore),
    groupKeys: trajectories.map((t) => t.trajGroupId),
    type: config.rollout_filter_type,
    ratio: config.rollout_filter_ratio,
  });
  const lengths = trajectories.map((t) => t.inputIds.length);
  const models = critic ? 2 : 1;
  const fwdFlops =
    modelFlops(
      cfg,
      keep.map((i) => lengths[i]),
    ) *
    models *
    config.ppo_epochs;
  const genFlops =
    modelFlops(
      cfg,
      contexts.map((c) => c.length),
      'last',
    ) +
    contexts.reduce(
      (s, c) => s + Array.from({ length: GEN_TOKENS - 1 }, (_, j) => decodeFlops(cfg, c.length + j)).reduce((a, b) => a + b, 0),
      0,
    );
  const tokens = lengths.reduce((a, b) => a + b, 0);
  const bucketed = paddingFraction(lengthBucketedMicroBatches(keep, lengths, micro), lengths);
  const shuffled = new Rng(1, 'order').shuffle([...keep]);
  const unbucketed = paddingFraction(
    Array.from({ length: Math.ceil(shuffled.length / micro) }, (_, i) => shuffled.slice(i * micro, (i + 1) * micro)),
    lengths,
  );

  console.log(
    `backend ${backend}; config ${file} (${config.adv_estimator}${critic ? ' + critic' : ''}${reference ? ' + reference' : ''}); ` +
      `${BATCH} trajectories, ${tokens} tokens (mean ${(tokens / BATCH).toFixed(0)}, max ${Math.max(...lengths)}), micro-batches of ${micro}`,
  );
  console.log(
    `256^3 matmul: ${mm.wall.toFixed(1)} GFLOP/s (${mm.cpu.toFixed(1)} by CPU time); update wall ${wall.toFixed(2)} s, CPU ${updateCpu.toFixed(2)} s; load ${loadavg()[0].toFixed(1)}`,
  );
  console.log(
    `padding of the micro-batches: ${(100 * bucketed).toFixed(1)}% length-bucketed (${(100 * unbucketed).toFixed(1)}% in shuffled order)`,
  );
  const rows: Array<[string, number, number]> = [
    ['prepass (no grad)', prepassSeconds, modelFlops(cfg, lengths)],
    ['forward', metrics['time/update/forward'], fwdFlops],
    ['backward', metrics['time/update/backward'], 2 * fwdFlops],
    ['optimizer (AdamW)', metrics['time/update/optimizer'], NaN],
    ['update fwd+bwd', metrics['time/update/forward'] + metrics['time/update/backward'], 3 * fwdFlops],
    [`generation ${GEN_ROWS}x${GEN_TOKENS}`, genSeconds, genFlops],
  ];
  console.log('| phase | seconds | model GFLOP | GFLOP/s | / matmul |');
  console.log('|---|---|---|---|---|');
  for (const [name, s, f] of rows) {
    const rate = f / s / 1e9;
    console.log(
      `| ${name} | ${s.toFixed(2)} | ${Number.isNaN(f) ? '-' : (f / 1e9).toFixed(1)} | ${Number.isNaN(f) ? '-' : rate.toFixed(2)} | ${Number.isNaN(f) ? '-' : (rate / mm.wall).toFixed(2)} |`,
    );
  }
  // By CPU time (robust to other processes on the machine): the whole update (incl. host work and AdamW) and generation.
  const byCpu = (flops: number, s: number) =>
    `${(flops / s / 1e9).toFixed(2)} GFLOP/s = ${(flops / s / 1e9 / mm.cpu).toFixed(2)} of the matmul's ${mm.cpu.toFixed(1)}`;
  console.log(
    `by CPU time: update ${updateCpu.toFixed(2)} s, ${byCpu(3 * fwdFlops, updateCpu)}; generation ${genCpu.toFixed(2)} s, ${byCpu(genFlops, genCpu)}`,
  );
  console.log(
    `generation: ${((GEN_ROWS * GEN_TOKENS) / genSeconds).toFixed(0)} new tokens/s (contexts ${Math.min(...contexts.map((c) => c.length))}-${Math.max(...contexts.map((c) => c.length))} tokens, one prefill + ${GEN_TOKENS - 1} cached steps)`,
  );
  actor.dispose();
  critic?.dispose();
  reference?.dispose();
}

/** Index of the first token of answer `turn` (0-based) in a response mask, or of the last answer when there are fewer. */
function answerStart(mask: readonly number[], turn: number): number {
  const starts = mask.flatMap((m, i) => (m === 1 && (i === 0 || mask[i - 1] === 0) ? [i] : []));
  return starts[Math.min(turn, starts.length - 1)];
}

void main();
