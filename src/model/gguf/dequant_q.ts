/**
 * The 32-element block types Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0, decoded as ggml-quants.c's
 * `dequantize_row_*` decode them. Each block starts with an F16 scale `d` (and for _1 an F16 offset `m`);
 * the 4-bit types hold elements 0..15 in the low nibbles of `qs` and 16..31 in the high nibbles, and Q5
 * keeps each element's fifth bit in the 32-bit little-endian word `qh` (bit j for element j).
 *
 * Float32 semantics: C computes `x*d` and then `+ m` in float. An F16 scale has 11 significant bits and
 * x at most 8, so the product is exact in float32 and in double alike; the one rounding is the store into
 * the Float32Array, and a double sum of two float32 values rounded to float32 is the float32 sum (double
 * has more than 2 * 24 + 2 bits, so rounding twice is harmless). The results are C's bit for bit.
 */
import { halfTable } from './half';

export function dequantQ4_0(src: Uint8Array, out: Float32Array, blocks: number): void {
  const h = halfTable();
  for (let b = 0, p = 0, o = 0; b < blocks; b++, p += 18, o += 32) {
    const d = h[src[p] | (src[p + 1] << 8)];
    for (let j = 0; j < 16; j++) {
      const q = src[p + 2 + j];
      out[o + j] = ((q & 0x0f) - 8) * d;
      out[o + j + 16] = ((q >> 4) - 8) * d;
    }
  }
}

export function dequantQ4_1(src: Uint8Array, out: Float32Array, blocks: number): void {
  const h = halfTable();
  for (let b = 0, p = 0, o = 0; b < blocks; b++, p += 20, o += 32) {
    const d = h[src[p] | (src[p + 1] << 8)];
    const m = h[src[p + 2] | (src[p + 3] << 8)];
    for (let j = 0; j < 16; j++) {
      const q = src[p + 4 + j];
      out[o + j] = (q & 0x0f) * d + m;
      out[o + j + 16] = (q >> 4) * d + m;
    }
  }
}

/** The Q5 high-bit word; a set bit 31 makes it negative, which the `& 0x10` masks below never see. */
function qh32(src: Uint8Array, p: number): number {
  return src[p] | (src[p + 1] << 8) | (src[p + 2] << 16) | (src[p + 3] << 24);
}

export function dequantQ5_0(src: Uint8Array, out: Float32Array, blocks: number): void {
  const h = halfTable();
  for (let b = 0, p = 0, o = 0; b < blocks; b++, p += 22, o += 32) {
    const d = h[src[p] | (src[p + 1] << 8)];
    const qh = qh32(src, p + 2);
    for (let j = 0; j < 16; j++) {
      const q = src[p + 6 + j];
      out[o + j] = ((q & 0x0f) + (((qh >> j) << 4) & 0x10) - 16) * d;
      out[o + j + 16] = ((q >> 4) + ((qh >> (j + 12)) & 0x10) - 16) * d;
    }
  }
}

export function dequantQ5_1(src: Uint8Array, out: Float32Array, blocks: number): void {
  const h = halfTable();
  for (let b = 0, p = 0, o = 0; b < blocks; b++, p += 24, o += 32) {
    const d = h[src[p] | (src[p + 1] << 8)];
    const m = h[src[p + 2] | (src[p + 3] << 8)];
    const qh = qh32(src, p + 4);
    for (let j = 0; j < 16; j++) {
      const q = src[p + 8 + j];
      out[o + j] = ((q & 0x0f) + (((qh >> j) << 4) & 0x10)) * d + m;
      out[o + j + 16] = ((q >> 4) + ((qh >> (j + 12)) & 0x10)) * d + m;
    }
  }
}

export function dequantQ8_0(src: Uint8Array, out: Float32Array, blocks: number): void {
  const h = halfTable();
  for (let b = 0, p = 0, o = 0; b < blocks; b++, p += 34, o += 32) {
    const d = h[src[p] | (src[p + 1] << 8)];
    for (let j = 0; j < 32; j++) out[o + j] = ((src[p + 2 + j] << 24) >> 24) * d;
  }
}
