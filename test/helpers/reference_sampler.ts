/**
 * The sort-based sampler starpo used before partial selection, as HF's warpers read: sort the whole vocabulary
 * (logit descending, ties by lower id), temperature, top-k, top-p (keep up to the first token whose cumulative
 * probability reaches top_p), then one draw walked in that order. The reference sampleToken is checked
 * against, and the "before" of bench/sampling.ts.
 */
import type { SamplingOptions } from '../../src/model/sampling';
import type { Rng } from '../../src/util/rng';

/** The token the sort-based sampler picks from one draw of `rng`. */
export function referenceSample(logits: Float32Array, opts: SamplingOptions, rng: Rng): number {
  const V = logits.length;
  const temperature = opts.temperature ?? 1;
  const topP = opts.topP ?? 1;
  const topK = opts.topK ?? 0;
  const idx = Array.from({ length: V }, (_, i) => i);
  idx.sort((a, b) => logits[b] - logits[a] || a - b);
  let n = topK > 0 && topK < V ? topK : V;
  const m = logits[idx[0]] / temperature;
  const w = idx.slice(0, n).map((i) => Math.exp(logits[i] / temperature - m));
  let total = w.reduce((s, x) => s + x, 0);
  if (topP < 1) {
    let before = 0;
    let keep = 0;
    while (keep < n && before < topP) before += w[keep++] / total;
    n = Math.max(1, keep);
    total = w.slice(0, n).reduce((s, x) => s + x, 0);
  }
  const u = rng.next() * total;
  let acc = 0;
  for (let i = 0; i < n; i++) {
    acc += w[i];
    if (u < acc) return idx[i];
  }
  return idx[n - 1];
}
