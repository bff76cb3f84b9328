/**
 * Rollout generation of a LoRA model two ways, on the same Qwen2.5-0.5B-shaped weights and adapters (rank r on
 * every decoder linear layer, non-zero B): the adapters applied on the fly (what starpo's rollout workers do: the
 * base stays cached and a new checkpoint's adapters are read alone), and the adapters merged into a copy of the
 * weights once per checkpoint (W + scale B A; the merge's own seconds and the copy's memory are printed too).
 * Rounds alternate between the two; each prints seconds and tokens/s with the load average.
 *
 *   node --import tsx bench/lora_generation.ts [--layers 24] [--rank 8] [--rows 8] [--prompt 128] [--new-tokens 32] [--rounds 3]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { peakRssBytes, qwen25HalfBShape, randomContexts, timeGeneration } from '../src/algo/throughput';
import { initBackend } from '../src/model/backend';
import { defaultBackend, hostBackends } from '../src/model/backend_choice';
import { LoraAdapters } from '../src/model/lora';
import { Qwen2 } from '../src/model/qwen2';
import { loadConfigFile } from '../src/preflight/load';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      layers: { type: 'string', default: '24' },
      rank: { type: 'string', default: '8' },
      rows: { type: 'string', default: '8' },
      prompt: { type: 'string', default: '128' },
      'new-tokens': { type: 'string', default: '32' },
      rounds: { type: 'string', default: '3' },
    },
  });
  const n = (k: keyof typeof values) => Number(values[k]);
  await initBackend(defaultBackend('update', hostBackends()));
  const { config } = loadConfigFile('configs/frozen_lake_solver.yaml'); // the quickstart's sampling settings
  const cfg = qwen25HalfBShape(n('layers'));
  const model = Qwen2.random(cfg, 1);
  const weights = model.toNamedTensors();
  const settings = {
    target: { kind: 'names' as const, names: ['all'] },
    rank: n('rank'),
    alpha: 2 * n('rank'),
    dropout: 0,
    additional: [],
  };
  const adapters = LoraAdapters.init(cfg, settings, 1, () => tf.scalar(0));
  for (const [name, v] of adapters.variables()) v.assign(tf.tidy(() => tf.randomNormal(v.shape, 0, 0.02, 'float32', name.length)));
  model.setAdapters(adapters);
  const mergeStart = performance.now();
  const mergedTensors = adapters.mergedInto(weights);
  const merged = Qwen2.fromNamedTensors(cfg, mergedTensors);
  tf.dispose([...mergedTensors].filter(([name, t]) => weights.get(name) !== t).map(([, t]) => t));
  const mergeSeconds = (performance.now() - mergeStart) / 1000;
  const copyGiB = [...merged.toNamedTensors().values()].reduce((s, t) => s + t.size * 4, 0) / 2 ** 30;
  console.log(
    `${n('layers')} layers, rank ${n('rank')} on every linear layer; merging took ${mergeSeconds.toFixed(2)} s for a ${copyGiB.toFixed(2)} GiB copy of the weights`,
  );
  const contexts = randomContexts({ rows: n('rows'), prompt: n('prompt'), vocab: cfg.vocab_size, seed: 1 });
  for (let r = 1; r <= n('rounds'); r++) {
    for (const [way, m] of [
      ['on the fly', model],
      ['merged', merged],
    ] as const) {
      const load = loadavg()[0];
      const t = timeGeneration({ model: m, config, contexts, newTokens: n('new-tokens'), seed: 1 });
      console.log(
        `round ${r} ${way}: ${t.seconds.toFixed(2)} s, ${t.tokensPerSecond.toFixed(1)} tokens/s (load ${load.toFixed(1)}-${loadavg()[0].toFixed(1)})`,
      );
    }
  }
  console.log(`peak RSS ${(peakRssBytes() / 2 ** 30).toFixed(2)} GiB (both models)`);
  merged.dispose();
  model.dispose();
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
