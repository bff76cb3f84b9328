/**
 * KV caches kept between the `generate` calls of one batch of multi-turn episodes, so turn t+1 feeds
 * only what turn t's cache lacks (the last sampled token and the new observation) instead of the whole
 * chat again. ROLL gets the same from vLLM's prefix caching; here the rollout manager (manager.ts) names
 * each episode by a row id that stays fixed across its turns.
 */
import * as tf from '@tensorflow/tfjs';
import type { LayerKV } from './qwen2';

/** One block of rows taken out of a generation batch: their cache rows, key masks and fed ids. */
export interface KvRows {
  /** Per layer float32 [n, KVH, T, D]; owned by the session once handed to `store`. */
  cache: LayerKV[];
  /** n key masks of length T. */
  keyMask: number[][];
  /** n token-id lists: the ids whose keys and values the rows hold, in order. */
  fed: number[][];
  /** n row ids. */
  rowIds: number[];
}

/** The cached state of some rows, gathered for a new generation call (the caller disposes `cache`). */
export interface ResumedRows {
  cache: LayerKV[];
  keyMask: number[][];
  /** Per row, the ids already fed (a prefix of its new context). */
  fed: number[][];
}

/** Frees per-layer cache tensors (none for undefined). */
export function disposeLayers(c: LayerKV[] | undefined): void {
  if (!c) return;
  for (const l of c) {
    l.k.dispose();
    l.v.dispose();
  }
}

/** Pads the cache rows on the right of the T axis to `T` slots (masked). */
function padTo(block: KvRows, T: number): KvRows {
  const t = block.keyMask[0]?.length ?? 0;
  if (t === T) return block;
  const pad: Array<[number, number]> = [
    [0, 0],
    [0, 0],
    [0, T - t],
    [0, 0],
  ];
  const cache = block.cache.map((l) => ({ k: tf.pad(l.k, pad), v: tf.pad(l.v, pad) }));
  disposeLayers(block.cache);
  return { ...block, cache, keyMask: block.keyMask.map((m) => [...m, ...new Array<number>(T - t).fill(0)]) };
}

/**
 * Per-row KV caches of the episodes of one rollout batch. Not thread-safe. Layout: one batch cache (per layer
 * float32 [R, KVH, T, D]) with, per row, a 0/1 key mask over the T slots (1 = a real token; 0 = left padding of
 * a prefill, or right padding of a row that finished its reply before the longest one) and the token ids fed so
 * far (the row's RoPE positions are 0..fed-1).
 */
export class KvSession {
  private rows: KvRows | null = null;

  /**
   * The cached rows for `rowIds`, in that order, when every id is held and each cached prefix starts
   * `contexts[i]` and is shorter than it; otherwise null (the caller prefills from scratch).
   * @param rowIds [B] row ids
   * @param contexts [B] token-id contexts
   */
  resume(rowIds: readonly number[], contexts: readonly number[][]): ResumedRows | null {
    const held = this.rows;
    if (held === null || rowIds.length === 0) return null;
    const at = new Map(held.rowIds.map((id, i) => [id, i]));
    const idx: number[] = [];
    for (const [b, id] of rowIds.entries()) {
      const i = at.get(id);
      if (i === undefined) return null;
      const fed = held.fed[i];
      const ctx = contexts[b];
      if (fed.length >= ctx.length || fed.some((tok, j) => ctx[j] !== tok)) return null;
      idx.push(i);
    }
    const index = tf.tensor1d(idx, 'int32');
    try {
      return {
        cache: held.cache.map((l) => ({ k: tf.gather(l.k, index) as tf.Tensor4D, v: tf.gather(l.v, index) as tf.Tensor4D })),
        keyMask: idx.map((i) => held.keyMask[i].slice()),
        fed: idx.map((i) => held.fed[i]),
      };
    } finally {
      index.dispose();
    }
  }

  /**
   * Replaces what the session holds by `blocks` (non-empty blocks of rows taken out of one generation
   * call as they finished), padded to a common T and stacked; takes ownership of their tensors.
   */
  store(blocks: KvRows[]): void {
    this.clear();
    if (blocks.length === 0) return;
    const T = Math.max(...blocks.map((b) => b.keyMask[0].length));
    const padded = blocks.map((b) => padTo(b, T));
    const layers = padded[0].cache.length;
    const cache = Array.from({ length: layers }, (_, l) => ({
      k:
        padded.length === 1
          ? padded[0].cache[l].k
          : (tf.concat(
              padded.map((b) => b.cache[l].k),
              0,
            ) as tf.Tensor4D),
      v:
        padded.length === 1
          ? padded[0].cache[l].v
          : (tf.concat(
              padded.map((b) => b.cache[l].v),
              0,
            ) as tf.Tensor4D),
    }));
    if (padded.length > 1) for (const b of padded) disposeLayers(b.cache);
    this.rows = {
      cache,
      keyMask: padded.flatMap((b) => b.keyMask),
      fed: padded.flatMap((b) => b.fed),
      rowIds: padded.flatMap((b) => b.rowIds),
    };
  }

  /** Frees the held caches (a later `resume` returns null until the next `store`). */
  clear(): void {
    if (this.rows) disposeLayers(this.rows.cache);
    this.rows = null;
  }
}
