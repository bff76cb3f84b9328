/**
 * Model throughput on this machine: forward+backward tokens/s and GFLOP/s for a 64 x 256-token batch of the tiny
 * preset (loss = -mean tokenLogProbs, as the trainer computes it), next to this process's 256^3 matmul GFLOP/s,
 * and KV-cache generation tokens/s for 64 rows. Run: `node --import tsx bench/model_flops.ts [B] [L]`.
 *
 * FLOPs counted analytically (bench/flops.ts modelFlops: causal attention as the lower triangle); forward + backward
 * = 3 x forward.
 */
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../src/model/backend';
import { tinyPreset } from '../src/model/config';
import { generate } from '../src/model/generate';
import { tokenLogProbs } from '../src/model/logprobs';
import { Qwen2 } from '../src/model/qwen2';
import { charTokenizer } from '../src/model/tokenizer';
import { Rng } from '../src/util/rng';
import { matmulGflops, modelFlops } from './flops';

async function main(): Promise<void> {
  const backend = await initBackend();
  const B = Number(process.argv[2] ?? 64);
  const L = Number(process.argv[3] ?? 256);
  const tok = charTokenizer();
  const cfg = tinyPreset(tok.vocabSize);
  const model = Qwen2.random(cfg, 1);
  const vars = [...model.trainableVariables().values()];
  const rng = new Rng(1, 'bench');
  const ids = tf.tensor2d(
    Int32Array.from({ length: B * L }, () => 4 + rng.int(tok.vocabSize - 4)),
    [B, L],
    'int32',
  );
  const mask = tf.ones([B, L]) as tf.Tensor2D;

  const trainFlops = 3 * modelFlops(cfg, new Array<number>(B).fill(L));

  const step = (): number => {
    const t0 = performance.now();
    const { value, grads } = tf.variableGrads(() => tf.neg(tf.mean(tokenLogProbs(model, ids, mask).logp)) as tf.Scalar, vars);
    value.dataSync();
    for (const g of Object.values(grads)) g.dataSync();
    tf.dispose([value, ...Object.values(grads)]);
    return performance.now() - t0;
  };
  step(); // warm-up
  const times = [step(), step(), step()];
  const ms = Math.min(...times);
  const mm = matmulGflops().wall;
  console.log(`backend ${backend}; tiny preset ${vars.reduce((s, v) => s + v.size, 0)} params`);
  console.log(`256^3 matmul: ${mm.toFixed(1)} GFLOP/s`);
  console.log(
    `train fwd+bwd ${B}x${L}: ${ms.toFixed(0)} ms (best of 3), ${((B * L) / (ms / 1000)).toFixed(0)} tokens/s, ` +
      `${(trainFlops / ms / 1e6).toFixed(2)} GFLOP/s (${((100 * trainFlops) / ms / 1e6 / mm).toFixed(0)}% of matmul)`,
  );
  tf.dispose([ids, mask]);

  const rows = 64;
  const contexts = Array.from({ length: rows }, (_, i) => Array.from({ length: 120 + (i % 8) * 10 }, () => 4 + rng.int(tok.vocabSize - 4)));
  const gen = (): [number, number] => {
    const t0 = performance.now();
    const r = generate(model, contexts, { maxNewTokens: 64, temperature: 1, stopIds: [], rngs: contexts.map((_, i) => new Rng(2, i)) });
    return [r.tokens.reduce((s, t) => s + t.length, 0), performance.now() - t0];
  };
  gen();
  const [n, gms] = gen();
  console.log(
    `generation ${rows} rows x 64 new tokens (contexts 120-190): ${gms.toFixed(0)} ms, ${(n / (gms / 1000)).toFixed(0)} tokens/s`,
  );
  model.dispose();
}

void main();
