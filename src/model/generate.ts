/**
 * Batched autoregressive generation with a KV cache (docs/numerics.md §4.3): one prefill of the left-padded contexts,
 * then one token per active row per step; tokens are sampled on the host (sampling.ts) from each row's own Rng.
 * A KvSession (kv_session.ts) keeps finished rows' caches for the next turn of their episodes.
 */
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../util/rng';
import { type AttentionMask, causalMask, disposeMask } from './attention_mask';
import { disposeLayers, type KvRows, type KvSession } from './kv_session';
import type { LayerKV, Qwen2 } from './qwen2';
import { type SamplingOptions, sampleToken } from './sampling';

/** Options of `generate`. */
export interface GenerateOptions extends SamplingOptions {
  /** New-token budget, one number for all rows or one per row (>= 0). */
  maxNewTokens: number | number[];
  /** A row stops right after emitting one of these ids (the id is kept in its tokens). */
  stopIds: readonly number[];
  /** One seeded stream per row (required when sampling); only row i's draws come from rngs[i]. */
  rngs?: Rng[];
  /**
   * Keeps each row's KV cache for the next call (kv_session.ts): with `rowIds`, a row whose cache the
   * session holds feeds only the part of its context past the cached prefix, and every row's cache is
   * stored back when it finishes. Without it (or without rowIds) every call prefills whole contexts.
   */
  session?: KvSession;
  /** [R] ids naming each row's episode across calls (with `session`). */
  rowIds?: number[];
}

/** Output of `generate`: per row, the new token ids and their raw log-probs (nats, temperature 1, no top-k/p). */
export interface GenerateResult {
  tokens: number[][];
  logprobs: number[][];
}

/**
 * One model call for generation: the last position's logits copied to the host ([B*V] float32) and
 * the new KV cache. Disposes `ids` and `mask`; the caller disposes the previous cache.
 */
function runStep(
  model: Qwen2,
  ids: tf.Tensor2D,
  positions: Int32Array,
  mask: AttentionMask,
  cache: LayerKV[] | undefined,
): { cache: LayerKV[] | undefined; logitsData: Float32Array } {
  try {
    const out = model.run({ ids, positions, mask, cache, returnCache: true, lastOnly: true });
    const logitsData = out.logits.dataSync() as Float32Array;
    out.logits.dispose();
    return { cache: out.cache, logitsData };
  } finally {
    ids.dispose();
    disposeMask(mask);
  }
}

/**
 * Generates continuations for a batch of token-id contexts. Contexts of different lengths are LEFT-padded into
 * one prefill; each row's position ids start at 0 at its first real token and pad keys are masked, so a row's
 * logits equal those of an unpadded forward. Finished rows leave the batch (their cache rows are gathered out),
 * so they stop costing compute; with a session they are kept for the next call, which feeds each row only its
 * new tokens.
 * @param contexts one non-empty int array per row (ids in [0, vocab_size))
 * @returns tokens[i] (<= maxNewTokens[i] ids, ending with a stop id if one was emitted) and logprobs[i] (same length),
 *   where logprobs[i][j] = log p(tokens[i][j] | context, tokens[i][<j]) under the raw model distribution; equal to
 *   tokenLogProbs on the concatenation within float32 rounding.
 * @throws RangeError on an empty context, a negative/non-integer budget, a rngs/maxNewTokens/rowIds length != rows,
 *   or context + budget > max_position_embeddings; Error when sampling without rngs.
 */
export function generate(model: Qwen2, contexts: number[][], opts: GenerateOptions): GenerateResult {
  const cfg = model.config;
  const R = contexts.length;
  const budgets = typeof opts.maxNewTokens === 'number' ? new Array<number>(R).fill(opts.maxNewTokens) : opts.maxNewTokens;
  if (budgets.length !== R) throw new RangeError(`generate: maxNewTokens has ${budgets.length} entries for ${R} rows`);
  if (opts.rowIds && opts.rowIds.length !== R) throw new RangeError(`generate: rowIds has ${opts.rowIds.length} entries for ${R} rows`);
  const sampling = opts.doSample !== false && (opts.temperature ?? 1) > 0;
  if (sampling && (!opts.rngs || opts.rngs.length !== R)) {
    throw new RangeError(`generate: rngs must have one Rng per row when sampling (got ${opts.rngs?.length ?? 0} for ${R} rows)`);
  }
  contexts.forEach((c, i) => {
    if (c.length === 0) throw new RangeError(`generate: contexts[${i}] is empty`);
    const b = budgets[i];
    if (!Number.isInteger(b) || b < 0) throw new RangeError(`generate: maxNewTokens[${i}] = ${b}; allowed: an integer >= 0`);
    if (c.length + b > cfg.max_position_embeddings) {
      throw new RangeError(
        `generate: row ${i} context ${c.length} + maxNewTokens ${b} > max_position_embeddings ${cfg.max_position_embeddings}`,
      );
    }
  });
  const stop = new Set(opts.stopIds);
  const tokens: number[][] = contexts.map(() => []);
  const logprobs: number[][] = contexts.map(() => []);
  let active = contexts.map((_, i) => i).filter((i) => budgets[i] > 0);
  if (active.length === 0) return { tokens, logprobs };

  const G = cfg.num_attention_heads / cfg.num_key_value_heads;
  const V = cfg.vocab_size;
  const session = opts.rowIds ? opts.session : undefined;
  const resumed =
    session?.resume(
      active.map((i) => opts.rowIds![i]),
      active.map((i) => contexts[i]),
    ) ?? null;
  if (session && !resumed) session.clear();
  // Prefill: each row's context past its cached prefix (all of it without a cache), left-padded to the longest.
  const done = resumed ? resumed.fed.map((f) => f.length) : active.map(() => 0);
  const Lmax = Math.max(...active.map((row, b) => contexts[row].length - done[b]));
  let B = active.length;
  const ids = new Int32Array(B * Lmax);
  const pos = new Int32Array(B * Lmax);
  let keyMask: number[][] = [];
  const nextPos: number[] = [];
  active.forEach((row, b) => {
    const c = contexts[row];
    const pad = Lmax - (c.length - done[b]);
    const m = new Array<number>(Lmax).fill(0);
    for (let j = done[b]; j < c.length; j++) {
      const at = b * Lmax + pad + j - done[b];
      ids[at] = c[j];
      pos[at] = j;
      m[pad + j - done[b]] = 1;
    }
    keyMask.push(resumed ? [...resumed.keyMask[b], ...m] : m);
    nextPos.push(c.length);
  });
  const Lk = keyMask[0].length;
  let cache: LayerKV[] | undefined;
  let logitsData: Float32Array;
  try {
    ({ cache, logitsData } = runStep(
      model,
      tf.tensor2d(ids, [B, Lmax], 'int32'),
      pos,
      causalMask(keyMask.flat(), B, Lmax, Lk, G),
      resumed?.cache,
    ));
  } finally {
    disposeLayers(resumed?.cache);
  }
  // With a session: the rows taken out of the batch as they finish, kept for the next call.
  const finished: KvRows[] = [];
  const takeRows = (bs: number[]): void => {
    if (!session || bs.length === 0) return;
    const idx = tf.tensor1d(bs, 'int32');
    finished.push({
      cache: cache!.map((l) => ({ k: tf.gather(l.k, idx) as tf.Tensor4D, v: tf.gather(l.v, idx) as tf.Tensor4D })),
      keyMask: bs.map((b) => keyMask[b].slice()),
      // Fed so far: the context and every sampled token but the last (sampled, not yet fed).
      fed: bs.map((b) => [...contexts[active[b]], ...tokens[active[b]].slice(0, -1)]),
      rowIds: bs.map((b) => opts.rowIds![active[b]]),
    });
    idx.dispose();
  };

  try {
    for (;;) {
      // Sample one token per active row.
      const stepTokens: number[] = [];
      const keep: number[] = [];
      const stopped: number[] = [];
      active.forEach((row, b) => {
        const { token, logprob } = sampleToken(logitsData, b * V, V, opts, opts.rngs?.[row]);
        tokens[row].push(token);
        logprobs[row].push(logprob);
        if (stop.has(token) || tokens[row].length >= budgets[row]) stopped.push(b);
        else {
          keep.push(b);
          stepTokens.push(token);
        }
      });
      takeRows(stopped);
      if (keep.length === 0) break;
      // Drop finished rows from the batch.
      if (keep.length < B) {
        const idx = tf.tensor1d(keep, 'int32');
        const old = cache!;
        cache = old.map((l) => ({ k: tf.gather(l.k, idx) as tf.Tensor4D, v: tf.gather(l.v, idx) as tf.Tensor4D }));
        disposeLayers(old);
        idx.dispose();
        active = keep.map((b) => active[b]);
        keyMask = keep.map((b) => keyMask[b]);
        const np = keep.map((b) => nextPos[b]);
        nextPos.length = 0;
        nextPos.push(...np);
        B = keep.length;
      }
      // One decoding step.
      for (const m of keyMask) m.push(1);
      const T = keyMask[0].length;
      const positions = Int32Array.from(nextPos);
      for (let b = 0; b < B; b++) nextPos[b]++;
      const previous = cache;
      ({ cache, logitsData } = runStep(
        model,
        tf.tensor2d(Int32Array.from(stepTokens), [B, 1], 'int32'),
        positions,
        causalMask(keyMask.flat(), B, 1, T, G),
        previous,
      ));
      disposeLayers(previous);
    }
    session?.store(finished.splice(0));
  } finally {
    disposeLayers(cache);
    for (const f of finished) disposeLayers(f.cache);
  }
  return { tokens, logprobs };
}
