/**
 * Seconds per optimizer step (the global-norm clip and AdamW, src/algo/adamw.ts) and peak RSS for a model of
 * `--params` parameters split into `--layers` decoder layers' worth of matrices (Llama/Qwen2 names and shapes:
 * q/k/v/o, gate/up/down, two norms per layer, an embedding of about a fifth of the parameters, a final norm),
 * with random weights and gradients held by the backend, as training holds them: a kernel copies each host-made
 * random tensor to the backend and the host copy is collected at once (otherwise it would sit in the RSS of one
 * implementation and be read in place by another), and each weight is a variable that alone holds its buffer (as
 * the model's are). The first step allocates the moments; the rest show the steady rate. The same gradients are
 * reused every step, so they are kept (optimizerStep frees each one as soon as its weight is updated). Prints one
 * JSON line. No assertions.
 *
 *   node --import tsx bench/optimizer_step.ts [--params 135e6] [--layers 30] [--hidden 576] [--steps 5]
 *     [--backend tensorflow|wasm] [--weight-decay 0.1] [--max-grad-norm 1]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import * as tf from '@tensorflow/tfjs';
import { AdamW, clipByGlobalNorm } from '../src/algo/adamw';
import { peakRssBytes } from '../src/algo/throughput';
import { initBackend } from '../src/model/backend';

const { values: o } = parseArgs({
  options: {
    params: { type: 'string', default: '135e6' },
    layers: { type: 'string', default: '30' },
    hidden: { type: 'string', default: '576' },
    steps: { type: 'string', default: '5' },
    backend: { type: 'string', default: 'tensorflow' },
    'weight-decay': { type: 'string', default: '0.1' },
    'max-grad-norm': { type: 'string', default: '1' },
  },
});
const gib = (bytes: number) => Math.round((bytes / 2 ** 30) * 100) / 100;

/**
 * Weight shapes by HF name for about `total` parameters: an embedding of a fifth of them, and per layer q and o
 * [h, h], k and v [h/3, h] (grouped-query attention), gate and up [i, h], down [h, i] and two norms [h], with the
 * intermediate size i taking what is left of the layer's share (135M, 30 layers, h 576 gives i ~ 1571, close to
 * SmolLM2-135M's 1536).
 */
function shapes(total: number, layers: number, h: number): Map<string, number[]> {
  const vocab = Math.max(1, Math.round((0.2 * total) / h));
  const kv = Math.max(1, Math.round(h / 3));
  const perLayer = (total - vocab * h - h) / layers;
  const i = Math.max(1, Math.round((perLayer - 2 * h * h - 2 * kv * h - 2 * h) / (3 * h)));
  const out = new Map<string, number[]>([['model.embed_tokens.weight', [vocab, h]]]);
  for (let l = 0; l < layers; l++) {
    const at = `model.layers.${l}`;
    for (const [name, shape] of [
      ['self_attn.q_proj.weight', [h, h]],
      ['self_attn.k_proj.weight', [kv, h]],
      ['self_attn.v_proj.weight', [kv, h]],
      ['self_attn.o_proj.weight', [h, h]],
      ['mlp.gate_proj.weight', [i, h]],
      ['mlp.up_proj.weight', [i, h]],
      ['mlp.down_proj.weight', [h, i]],
      ['input_layernorm.weight', [h]],
      ['post_attention_layernorm.weight', [h]],
    ] as const)
      out.set(`${at}.${name}`, [...shape]);
  }
  out.set('model.norm.weight', [h]);
  return out;
}

(async () => {
  const backend = await initBackend(o.backend);
  const layout = shapes(Number(o.params), Number(o.layers), Number(o.hidden));
  const params = new Map<string, tf.Variable>();
  const grads = new Map<string, tf.Tensor>();
  setFlagsFromString('--expose-gc');
  const collectGarbage = runInNewContext('gc') as () => void;
  const onBackend = (shape: number[], std: number, seed: number) =>
    tf.tidy(() => tf.mul(tf.randomNormal(shape, 0, std, 'float32', seed), 1));
  for (const [name, shape] of layout) {
    params.set(
      name,
      tf.tidy(() => tf.variable(onBackend(shape, 0.02, 1), true, name)),
    );
    grads.set(name, onBackend(shape, 1e-3, 2));
    collectGarbage();
  }
  const count = [...params.values()].reduce((s, p) => s + p.size, 0);
  const rssReady = process.memoryUsage().rss;
  const optimizer = new AdamW({ weightDecay: Number(o['weight-decay']), params });
  // On a GPU the kernels run asynchronously: a scalar read of something computed after the step waits for it.
  const smallest = [...params.values()].reduce((a, b) => (b.size < a.size ? b : a));
  const wait = () => tf.tidy(() => tf.sum(smallest)).dataSync();
  const steps: Array<{ clip: number; adamw: number; total: number }> = [];
  for (let k = 0; k < Number(o.steps); k++) {
    const t0 = performance.now();
    const { scale } = clipByGlobalNorm(grads, Number(o['max-grad-norm']));
    const t1 = performance.now();
    optimizer.applyGradients(grads, 1e-4, undefined, scale);
    wait();
    const t2 = performance.now();
    const s = (ms: number) => Math.round(ms) / 1000;
    steps.push({ clip: s(t1 - t0), adamw: s(t2 - t1), total: s(t2 - t0) });
  }
  console.log(
    JSON.stringify({
      bench: 'optimizer_step',
      backend,
      params: count,
      tensors: params.size,
      largest: Math.max(...[...params.values()].map((p) => p.size)),
      steps,
      rssBeforeOptimizerGiB: gib(rssReady),
      peakRssGiB: gib(peakRssBytes()),
      load: loadavg()[0],
    }),
  );
  optimizer.dispose();
  tf.dispose([...params.values(), ...grads.values()]);
})();
