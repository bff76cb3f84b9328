/**
 * Token sampling on the host from one row of logits (HF generation order: temperature, then top-k, then top-p),
 * drawing from the row's own seeded stream (util/rng.ts) so results do not depend on batch composition.
 */
import type { Rng } from '../util/rng';

/** Sampling settings (ROLL/HF generating_args names in camelCase). */
export interface SamplingOptions {
  /** Softmax temperature (> 0); <= 0 behaves as greedy. Default 1. */
  temperature?: number;
  /** Nucleus mass in (0, 1]; 1 (default) disables. */
  topP?: number;
  /** Keep only the k most likely ids; 0 or >= vocab (default 0) disables. */
  topK?: number;
  /** false = greedy argmax (ties: lowest id). Default true. */
  doSample?: boolean;
}

/** log-sum-exp of logits[off .. off+V) in float64. */
export function logSumExp(logits: ArrayLike<number>, off: number, V: number): number {
  let m = -Infinity;
  for (let i = 0; i < V; i++) if (logits[off + i] > m) m = logits[off + i];
  let s = 0;
  for (let i = 0; i < V; i++) s += Math.exp(logits[off + i] - m);
  return m + Math.log(s);
}

/**
 * Picks one token id from logits[off .. off+V).
 * @returns the id and its log-prob under the RAW distribution (temperature 1, no top-k/p), in nats.
 * @throws RangeError when topP is outside (0, 1] or topK is negative.
 */
export function sampleToken(
  logits: ArrayLike<number>,
  off: number,
  V: number,
  opts: SamplingOptions,
  rng: Rng | undefined,
): { token: number; logprob: number } {
  const lse = logSumExp(logits, off, V);
  const temperature = opts.temperature ?? 1;
  const topP = opts.topP ?? 1;
  const topK = opts.topK ?? 0;
  if (!(topP > 0 && topP <= 1)) throw new RangeError(`sampleToken: topP = ${topP} is invalid; allowed: (0, 1]`);
  if (!(topK >= 0)) throw new RangeError(`sampleToken: topK = ${topK} is invalid; allowed: an integer >= 0`);
  let token = 0;
  if (opts.doSample === false || temperature <= 0) {
    let best = -Infinity;
    for (let i = 0; i < V; i++) {
      if (logits[off + i] > best) {
        best = logits[off + i];
        token = i;
      }
    }
  } else {
    if (!rng) throw new Error('sampleToken: doSample needs an Rng for the row');
    const idx = Array.from({ length: V }, (_, i) => i);
    idx.sort((a, b) => logits[off + b] - logits[off + a] || a - b);
    let n = topK > 0 && topK < V ? topK : V;
    const m = logits[off + idx[0]] / temperature;
    const w = new Float64Array(n);
    let total = 0;
    for (let i = 0; i < n; i++) {
      w[i] = Math.exp(logits[off + idx[i]] / temperature - m);
      total += w[i];
    }
    if (topP < 1) {
      // HF TopPLogitsWarper: drop a token when the mass of the strictly more likely tokens is already >= top_p.
      let before = 0;
      let keep = 0;
      while (keep < n && before < topP) {
        before += w[keep] / total;
        keep++;
      }
      n = Math.max(1, keep);
      total = 0;
      for (let i = 0; i < n; i++) total += w[i];
    }
    const u = rng.next() * total;
    let acc = 0;
    token = idx[n - 1];
    for (let i = 0; i < n; i++) {
      acc += w[i];
      if (u < acc) {
        token = idx[i];
        break;
      }
    }
  }
  return { token, logprob: logits[off + token] - lse };
}
