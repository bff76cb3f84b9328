/**
 * Token sampling on the host from one row of logits (HF generation order: temperature, then top-k, then top-p),
 * drawing from the row's own seeded stream (util/rng.ts) so results do not depend on batch composition.
 *
 * The tokens are ranked by logit, ties by lower id (the order HF's sort gives). Sampling walks that order
 * until the cumulative mass passes the draw; top-k and top-p cut it. Nothing sorts the whole vocabulary:
 * a quickselect finds the top-k, and the walk partitions around pivots, keeping only the side the answer is
 * on (expected O(V) per token instead of O(V log V), which at a 151,936-token vocabulary was most of a decode step).
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
  const temperature = opts.temperature ?? 1;
  const topP = opts.topP ?? 1;
  const topK = opts.topK ?? 0;
  if (!(topP > 0 && topP <= 1)) throw new RangeError(`sampleToken: topP = ${topP} is invalid; allowed: (0, 1]`);
  if (!(topK >= 0)) throw new RangeError(`sampleToken: topK = ${topK} is invalid; allowed: an integer >= 0`);
  if (opts.doSample === false || temperature <= 0) {
    const token = argmax(logits, off, V);
    return { token, logprob: logits[off + token] - logSumExp(logits, off, V) };
  }
  if (!rng) throw new Error('sampleToken: doSample needs an Rng for the row');
  const ranking = new Ranking(logits, off, V, temperature);
  const token = sampleRanked(ranking, topK, topP, rng);
  return { token, logprob: logits[off + token] - ranking.logSumExp };
}

/** The first id of the largest logit. */
function argmax(logits: ArrayLike<number>, off: number, V: number): number {
  let token = 0;
  let best = -Infinity;
  for (let i = 0; i < V; i++) {
    if (logits[off + i] > best) {
      best = logits[off + i];
      token = i;
    }
  }
  return token;
}

/** Top-k, then top-p, then one draw, each over the ranked candidates. */
function sampleRanked(r: Ranking, topK: number, topP: number, rng: Rng): number {
  let n = topK > 0 && topK < r.V ? r.selectTop(topK) : r.V;
  let total = r.mass(0, n);
  if (topP < 1) {
    // HF TopPLogitsWarper: drop a token when the mass of the strictly more likely tokens is already >= top_p,
    // i.e. keep up to the first token whose cumulative probability reaches top_p.
    const last = r.firstReaching(n, topP, total, true);
    n = r.keepRankedUpTo(n, last);
    total = r.mass(0, n);
  }
  return r.firstReaching(n, rng.next() * total, 1, false);
}

/** Scratch buffers reused across calls (generation samples one token per row per step). */
let idBuffer = new Int32Array(0);
let weightBuffer = new Float64Array(0);
let logitBuffer = new Float64Array(0);
let bucketBuffer = new Int32Array(0);

/** Buckets of the first pass over many candidates (see firstReaching). */
const BUCKETS = 1024;
/** Below this many candidates a walk partitions them directly; below SMALL it sorts them. */
const MANY = 4096;
const SMALL = 32;

/**
 * The candidate ids of one row with their weights exp(logit / T - max / T), in a buffer reordered in place.
 * Rank order: higher logit first, ties by lower id.
 */
class Ranking {
  readonly ids: Int32Array;
  readonly w: Float64Array;
  /** The row's logits, copied into one array type so the comparisons stay fast whatever the caller passed. */
  private readonly l: Float64Array;
  private readonly maxLogit: number;
  private readonly minLogit: number;
  /** log-sum-exp of the row's raw logits (temperature 1), equal to logSumExp's. */
  readonly logSumExp: number;

  constructor(
    logits: ArrayLike<number>,
    off: number,
    readonly V: number,
    temperature: number,
  ) {
    if (idBuffer.length < V) {
      idBuffer = new Int32Array(V);
      weightBuffer = new Float64Array(V);
      logitBuffer = new Float64Array(V);
      bucketBuffer = new Int32Array(V);
    }
    this.ids = idBuffer;
    this.w = weightBuffer;
    this.l = logitBuffer;
    this.maxLogit = logits[off + argmax(logits, off, V)];
    const m = this.maxLogit / temperature;
    let min = Infinity;
    let sum = 0;
    for (let i = 0; i < V; i++) {
      const x = logits[off + i];
      this.ids[i] = i;
      this.l[i] = x;
      this.w[i] = Math.exp(x / temperature - m);
      // The raw distribution's normaliser, summed as logSumExp sums it (at temperature 1 the weights are its terms).
      sum += temperature === 1 ? this.w[i] : Math.exp(x - this.maxLogit);
      if (x < min) min = x;
    }
    this.minLogit = min;
    this.logSumExp = this.maxLogit + Math.log(sum);
  }

  /** Whether id a ranks before id b. */
  before(a: number, b: number): boolean {
    const la = this.l[a];
    const lb = this.l[b];
    return la > lb || (la === lb && a < b);
  }

  /** Total weight of ids[lo .. hi). */
  mass(lo: number, hi: number): number {
    let s = 0;
    for (let i = lo; i < hi; i++) s += this.w[this.ids[i]];
    return s;
  }

  /** Moves the k best-ranked of ids[0 .. V) into ids[0 .. k) (quickselect). @returns k */
  selectTop(k: number): number {
    let lo = 0;
    let hi = this.V;
    while (hi - lo > 1) {
      const at = this.partition(lo, hi);
      if (at === k || at === k - 1) break;
      if (at > k) hi = at;
      else lo = at + 1;
    }
    return k;
  }

  /** Keeps the ids of ids[0 .. n) ranked at or before `last`, moved to ids[0 .. m). @returns m */
  keepRankedUpTo(n: number, last: number): number {
    let m = 0;
    for (let i = 0; i < n; i++) {
      const id = this.ids[i];
      if (id === last || this.before(id, last)) {
        this.ids[i] = this.ids[m];
        this.ids[m++] = id;
      }
    }
    return m;
  }

  /**
   * The first id of ids[0 .. n) in rank order whose cumulative weight / `scale` reaches `target` (>= with
   * `inclusive`, > without), or the last one ranked when none does (float rounding). Many candidates first go
   * into buckets by logit (a bucket's ids all rank before the next bucket's): the walk then only looks inside
   * the bucket where the cumulative weight reaches the target.
   */
  firstReaching(n: number, target: number, scale: number, inclusive: boolean): number {
    const reaches = (cumulative: number) => (inclusive ? cumulative >= target : cumulative > target);
    // Equal logits, or infinite ones, leave nothing to bucket by.
    const spread = this.maxLogit - this.minLogit;
    if (n < MANY || !(spread > 0 && spread < Infinity)) return this.walk(0, n, 0, scale, reaches);
    const { ids, w, l } = this;
    const bucketOf = bucketBuffer;
    const perLogit = (BUCKETS - 1) / spread;
    const bucketMass = new Float64Array(BUCKETS);
    for (let i = 0; i < n; i++) {
      const id = ids[i];
      const k = Math.floor((this.maxLogit - l[id]) * perLogit);
      bucketOf[id] = k;
      bucketMass[k] += w[id];
    }
    let acc = 0;
    let k = 0;
    let lastFilled = 0;
    for (; k < BUCKETS; k++) {
      if (bucketMass[k] === 0) continue;
      lastFilled = k;
      if (reaches(acc + bucketMass[k] / scale)) break;
      acc += bucketMass[k] / scale;
    }
    if (k === BUCKETS) {
      // Rounding: no bucket reaches the target; the answer is the last ranked id, in the last filled bucket.
      k = lastFilled;
      acc -= bucketMass[k] / scale;
    }
    let count = 0;
    for (let i = 0; i < n; i++) {
      const id = ids[i];
      if (bucketOf[id] === k) {
        ids[i] = ids[count];
        ids[count++] = id;
      }
    }
    return this.walk(0, count, acc, scale, reaches);
  }

  /** firstReaching over ids[lo .. hi) after `acc` of scaled weight, partitioning around pivots. */
  private walk(lo: number, hi: number, acc: number, scale: number, reaches: (cumulative: number) => boolean): number {
    const { ids, w } = this;
    let lastPivot = -1;
    while (hi - lo > SMALL) {
      const at = this.partition(lo, hi);
      const pivot = ids[at];
      const before = acc + this.mass(lo, at) / scale;
      if (reaches(before)) hi = at;
      else if (reaches(before + w[pivot] / scale)) return pivot;
      else {
        acc = before + w[pivot] / scale;
        lo = at + 1;
        lastPivot = pivot;
      }
    }
    if (hi === lo) return lastPivot;
    const rest = Array.from(ids.subarray(lo, hi)).sort((a, b) => (this.before(a, b) ? -1 : 1));
    for (const id of rest) {
      acc += w[id] / scale;
      if (reaches(acc)) return id;
    }
    return rest[rest.length - 1];
  }

  /**
   * Partitions ids[lo .. hi) around a median-of-three pivot: the ids ranked before it, then it, then the rest.
   * @returns the pivot's index
   */
  private partition(lo: number, hi: number): number {
    const ids = this.ids;
    const mid = lo + ((hi - lo) >> 1);
    const [a, b, c] = [ids[lo], ids[mid], ids[hi - 1]];
    const pivotAt = this.before(a, b) === this.before(b, c) ? mid : this.before(b, a) === this.before(a, c) ? lo : hi - 1;
    const pivot = ids[pivotAt];
    ids[pivotAt] = ids[hi - 1];
    ids[hi - 1] = pivot;
    let store = lo;
    for (let i = lo; i < hi - 1; i++) {
      const id = ids[i];
      if (this.before(id, pivot)) {
        ids[i] = ids[store];
        ids[store++] = id;
      }
    }
    ids[hi - 1] = ids[store];
    ids[store] = pivot;
    return store;
  }
}
