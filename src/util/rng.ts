/**
 * Seeded pseudo-random numbers. Every random draw in starpo comes from here, never Math.random, so a
 * step can be replayed bit for bit. Streams are derived statelessly from their parts and used within
 * one step, so a checkpoint carries no generator state: a resumed step re-derives the same streams.
 */

/**
 * Hashes a list of seed parts (run seed, step, split, group id, turn, ...; numbers or strings) into four
 * unsigned 32-bit words: 32-bit FNV-1a mixed through splitmix32, so two different part lists give
 * unrelated streams.
 */
function seedWords(parts: ReadonlyArray<number | string>): [number, number, number, number] {
  let h = 0x811c9dc5;
  const text = parts.map(String).join('\u0000');
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  const out: number[] = [];
  let s = h;
  for (let i = 0; i < 4; i++) {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    out.push((z ^ (z >>> 16)) >>> 0);
  }
  return out as [number, number, number, number];
}

/** A seeded random stream: sfc32 (Chris Doty-Humphrey's Small Fast Counter, 128-bit state). State is four uint32 words and can be saved and restored. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /** @param parts seed parts, e.g. (runSeed, 'train', step, groupId); order matters. */
  constructor(...parts: Array<number | string>) {
    [this.a, this.b, this.c, this.d] = seedWords(parts);
    for (let i = 0; i < 12; i++) this.nextUint32();
  }

  /** Next uint32 in [0, 2^32). */
  nextUint32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }

  /** Uniform float in [0, 1) with 32 bits of randomness. */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform integer in [0, n). Throws RangeError when n is not a positive integer. */
  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0) throw new RangeError(`Rng.int: n must be a positive integer, got ${n}`);
    return Math.floor(this.next() * n);
  }

  /** Standard normal draw (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** In-place Fisher-Yates shuffle; returns the same array. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }
}

/** A uint32 seed derived from parts, for APIs (env reset, tfjs init) that take a single number. */
export function deriveSeed(...parts: Array<number | string>): number {
  return new Rng(...parts).nextUint32();
}
