/**
 * Multi-turn rollout time with and without the KV caches kept across turns (src/model/kv_session.ts), in
 * one process (no servers): plays the config's validation episodes (val_batch_size, the fixed held-out
 * states) with the random-init tiny model, whose mostly invalid answers keep every episode going to its
 * turn cap, once with the model policy as rollouts use it and once with its row ids removed (every turn
 * prefills the whole chat again). Prints seconds, turns and whether both plays gave the same trajectories.
 *
 *   npx tsx bench/rollout_turns.ts [configs/frozen_lake.yaml] [key=value ...]
 */

import type { Trajectory } from '../src/contract';
import { initBackend } from '../src/model/backend';
import { tinyPreset } from '../src/model/config';
import { Qwen2 } from '../src/model/qwen2';
import { charTokenizer } from '../src/model/tokenizer';
import { loadConfigFile } from '../src/preflight/load';
import { runEpisodes } from '../src/rollout/manager';
import { planShards } from '../src/rollout/plan';
import { modelPolicy, type Policy } from '../src/rollout/policy';
import { deriveSeed } from '../src/util/rng';

async function main(): Promise<void> {
  const { config } = loadConfigFile(process.argv[2] ?? 'configs/frozen_lake.yaml', process.argv.slice(3));
  console.log(`backend ${await initBackend()}`);
  const tokenizer = charTokenizer();
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize, config.config_overrides), deriveSeed(config.seed, 'init'));
  const gen = { ...config.actor_infer.generating_args, ...config.val_env_manager.generating_args };
  const specs = planShards(config, 'val', 0)
    .flat()
    .map((g, i) => ({ ...g, envId: i, rngParts: [1, i] }));
  const cached = modelPolicy(model, tokenizer, gen);
  const uncached: Policy = { generate: (request) => cached.generate({ ...request, rowIds: undefined }) };
  const results: Trajectory[][] = [];
  for (const [name, policy] of [
    ['KV caches kept across turns', cached],
    ['whole chat prefilled every turn', uncached],
  ] as const) {
    const t0 = performance.now();
    const trajs = await runEpisodes(specs, {
      policy,
      tokenizer,
      customEnvs: config.custom_envs,
      sequenceLength: config.sequence_length,
      maxNewTokens: gen.max_new_tokens,
      split: 'val',
      step: 0,
    });
    const seconds = (performance.now() - t0) / 1000;
    const turns = trajs.reduce((s, t) => s + t.turns.length, 0);
    const tokens = trajs.reduce((s, t) => s + t.inputIds.length, 0);
    console.log(
      `${name}: ${seconds.toFixed(1)} s for ${trajs.length} episodes, ${turns} turns, ${(tokens / trajs.length).toFixed(0)} tokens per trajectory`,
    );
    results.push(trajs);
  }
  const same = results[0].every((t, i) => JSON.stringify(t.inputIds) === JSON.stringify(results[1][i].inputIds));
  console.log(`same trajectories (token ids) both ways: ${same ? 'yes' : 'no'}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
