/**
 * One StarPO update of a 128-trajectory FrozenLake batch on the tiny model (issue 3, "Must show"):
 * wall time split into prepass / forward / backward / optimizer, the model FLOP/s of the training
 * passes, next to this process's 256^3 matmul FLOP/s.
 *
 *   node --import tsx bench/update_breakdown.ts [config.yaml] [overrides...]
 *
 * The batch is 128 format-demonstration episodes (random valid actions, as the warm-up plays them),
 * in 16 groups of 8 with their real episode scores; the policy is a random init (its speed does not
 * depend on its weights). The config (default configs/frozen_lake.yaml, one optimizer step per update)
 * picks the algorithm: e.g. configs/starpo_s_frozen_lake.yaml adds the critic's passes.
 */
import { initBackend } from '../src/model/backend';
import { charTokenizer } from '../src/model/tokenizer';
import { tinyPreset } from '../src/model/config';
import { Qwen2 } from '../src/model/qwen2';
import { ValueModel } from '../src/model/value_model';
import { AdamW } from '../src/algo/adamw';
import { lengthBucketedMicroBatches } from '../src/algo/batch';
import { ppoUpdate, needsReference } from '../src/algo/ppo_update';
import { filterGroups } from '../src/algo/filter';
import { klControllerFromConfig } from '../src/algo/kl_controller';
import { loadConfigFile } from '../src/config/load';
import { formatDemonstrations } from '../src/rollout/demonstrations';
import { forwardFlops, matmulGflops } from './flops';

const BATCH = 128;
const GROUP = 8;

async function main(): Promise<void> {
  const backend = await initBackend();
  const [file = 'configs/frozen_lake.yaml', ...overrides] = process.argv.slice(2);
  const { config } = loadConfigFile(file, [
    `rollout_batch_size=${BATCH}`, `train_env_manager.num_env_groups=${BATCH / GROUP}`, `train_env_manager.group_size=${GROUP}`,
    `train_env_manager.num_groups_partition=[${BATCH / GROUP}]`, `++warmup.num_episodes=${BATCH}`,
    `actor_train.training_args.gradient_accumulation_steps=${BATCH / 8}`, 'actor_train.training_args.per_device_train_batch_size=8',
    ...overrides,
  ]);
  const tokenizer = charTokenizer();
  const demos = await formatDemonstrations(config, tokenizer);
  const trajectories = demos.map((t, i) => ({ ...t, trajGroupId: `FrozenLake_${Math.floor(i / GROUP)}_0_0` }));
  const cfg = tinyPreset(tokenizer.vocabSize);
  const actor = Qwen2.random(cfg, 1);
  const critic = config.adv_estimator === 'gae' ? ValueModel.fromPolicy(actor) : null;
  const reference = needsReference(config) ? Qwen2.fromNamedTensors(cfg, actor.toNamedTensors()) : null;

  const run = () => ppoUpdate({
    actor: { model: actor, optimizer: new AdamW({}), lr: () => 1e-4 },
    critic: critic ? { model: critic, optimizer: new AdamW({}), lr: () => 1e-4 } : null,
    reference, klController: klControllerFromConfig(config), trajectories, config, step: 0, padId: tokenizer.padId,
  });
  await run(); // warm-up: kernel compilation and first allocations
  const started = performance.now();
  const { metrics } = await run();
  const wall = (performance.now() - started) / 1000;
  const mm = matmulGflops();

  // FLOPs of the trained micro-batches as the update pads them: the trajectories the StarPO-S filter
  // keeps, length-bucketed into micro-batches (one minibatch per epoch in these configs).
  const { keep } = filterGroups({
    scores: trajectories.map((t) => t.episodeScore), groupKeys: trajectories.map((t) => t.trajGroupId),
    type: config.rollout_filter_type, ratio: config.rollout_filter_ratio,
  });
  const micro = config.actor_train.training_args.per_device_train_batch_size;
  const lengths = trajectories.map((t) => t.inputIds.length);
  const fwd = lengthBucketedMicroBatches(keep, lengths, micro)
    .reduce((s, idx) => s + forwardFlops(cfg, idx.length, Math.max(...idx.map((i) => lengths[i]))), 0);
  const models = critic ? 2 : 1;
  const trainFlops = 3 * fwd * models * config.ppo_epochs;
  const trainSeconds = metrics['time/update/forward'] + metrics['time/update/backward'];
  const gflops = trainFlops / trainSeconds / 1e9;
  const tokens = lengths.reduce((a, b) => a + b, 0);
  const f = (s: number) => `${s.toFixed(2)} s (${((100 * s) / wall).toFixed(0)}%)`;

  console.log(`backend ${backend}; config ${file} (${config.adv_estimator}${critic ? ' + critic' : ''}${reference ? ' + reference' : ''}); ${BATCH} trajectories, ${tokens} tokens (mean ${(tokens / BATCH).toFixed(0)}, max ${Math.max(...lengths)})`);
  console.log(`256^3 matmul: ${mm.toFixed(1)} GFLOP/s`);
  console.log(`trained on ${keep.length} trajectories after the group filter (rollout_filter_ratio ${config.rollout_filter_ratio}, ${config.rollout_filter_type})`);
  console.log(`update wall ${wall.toFixed(2)} s: prepass ${f(metrics['time/update/prepass'])}, forward ${f(metrics['time/update/forward'])}, ` +
    `backward ${f(metrics['time/update/backward'])}, optimizer ${f(metrics['time/update/optimizer'])}`);
  console.log(`training passes: ${(trainFlops / 1e9).toFixed(1)} GFLOP in ${trainSeconds.toFixed(2)} s = ${gflops.toFixed(2)} GFLOP/s ` +
    `(${(gflops / mm).toFixed(2)} of the matmul rate)`);
  actor.dispose();
  critic?.dispose();
  reference?.dispose();
}

void main();
