/**
 * The K-quants Q4_K, Q5_K and Q6_K: 256-element super-blocks of 16 or 32-element sub-blocks, decoded as
 * ggml-quants.c's `dequantize_row_*` decode them, float32 rounding included. C's float intermediates are
 * exact here: an F16 scale (11 significant bits) times a 6-bit scale and then a 5-bit quant needs at most
 * 22 bits, and Q6_K's F16 times int8 scale needs 19. So the double arithmetic below rounds only where C
 * rounds last: the store into the Float32Array (see dequant_q.ts for why a double sum rounds as C's float).
 *
 * Q4_K (144 bytes): F16 d, F16 dmin, 12 bytes of eight 6-bit scales and eight 6-bit mins, 128 bytes of
 *   nibbles; each 64 elements are 32 low nibbles (scale 2i) then the same bytes' high nibbles (scale 2i+1).
 * Q5_K (176 bytes): as Q4_K with 32 bytes `qh` after the scales: bit 2i of qh[l] is the fifth bit of the
 *   low-nibble element l of group i, bit 2i+1 that of its high-nibble element.
 * Q6_K (210 bytes): 128 bytes `ql` (low 4 bits), 64 bytes `qh` (high 2 bits), 16 int8 scales, F16 d;
 *   each 128 elements use 64 bytes of ql and 32 of qh, in four runs of 32.
 */
import { halfTable } from './half';

/** Scale j (bits 0-5) and min j (bits 8-13) of a K-quant's 12-byte scale field, as `get_scale_min_k4`. */
function scaleMin(src: Uint8Array, s: number, j: number): number {
  if (j < 4) return (src[s + j] & 63) | ((src[s + j + 4] & 63) << 8);
  const sc = (src[s + j + 4] & 0x0f) | ((src[s + j - 4] >> 6) << 4);
  const m = (src[s + j + 4] >> 4) | ((src[s + j] >> 6) << 4);
  return sc | (m << 8);
}

export function dequantQ4_K(src: Uint8Array, out: Float32Array, blocks: number): void {
  const h = halfTable();
  for (let b = 0, p = 0, o = 0; b < blocks; b++, p += 144, o += 256) {
    const d = h[src[p] | (src[p + 1] << 8)];
    const dmin = h[src[p + 2] | (src[p + 3] << 8)];
    for (let g = 0; g < 4; g++) {
      const q = p + 16 + 32 * g;
      const y = o + 64 * g;
      const lo = scaleMin(src, p + 4, 2 * g);
      const hi = scaleMin(src, p + 4, 2 * g + 1);
      const d1 = d * (lo & 0xff);
      const m1 = dmin * (lo >> 8);
      const d2 = d * (hi & 0xff);
      const m2 = dmin * (hi >> 8);
      for (let l = 0; l < 32; l++) {
        out[y + l] = d1 * (src[q + l] & 0x0f) - m1;
        out[y + 32 + l] = d2 * (src[q + l] >> 4) - m2;
      }
    }
  }
}

export function dequantQ5_K(src: Uint8Array, out: Float32Array, blocks: number): void {
  const h = halfTable();
  for (let b = 0, p = 0, o = 0; b < blocks; b++, p += 176, o += 256) {
    const d = h[src[p] | (src[p + 1] << 8)];
    const dmin = h[src[p + 2] | (src[p + 3] << 8)];
    const qh = p + 16;
    for (let g = 0; g < 4; g++) {
      const q = p + 48 + 32 * g;
      const y = o + 64 * g;
      const lo = scaleMin(src, p + 4, 2 * g);
      const hi = scaleMin(src, p + 4, 2 * g + 1);
      const d1 = d * (lo & 0xff);
      const m1 = dmin * (lo >> 8);
      const d2 = d * (hi & 0xff);
      const m2 = dmin * (hi >> 8);
      const u1 = 1 << (2 * g);
      const u2 = 2 << (2 * g);
      for (let l = 0; l < 32; l++) {
        const high = src[qh + l];
        out[y + l] = d1 * ((src[q + l] & 0x0f) + (high & u1 ? 16 : 0)) - m1;
        out[y + 32 + l] = d2 * ((src[q + l] >> 4) + (high & u2 ? 16 : 0)) - m2;
      }
    }
  }
}

/** The 16 sub-block factors `d * scales[i]` of one Q6_K block (exact; the product with q rounds on store). */
const q6Scale = new Float64Array(16);

export function dequantQ6_K(src: Uint8Array, out: Float32Array, blocks: number): void {
  const h = halfTable();
  for (let b = 0, p = 0, o = 0; b < blocks; b++, p += 210, o += 256) {
    const d = h[src[p + 208] | (src[p + 209] << 8)];
    for (let i = 0; i < 16; i++) q6Scale[i] = d * ((src[p + 192 + i] << 24) >> 24);
    for (let n = 0; n < 2; n++) {
      const ql = p + 64 * n;
      const qh = p + 128 + 32 * n;
      const y = o + 128 * n;
      const s = 8 * n;
      for (let l = 0; l < 32; l++) {
        const is = s + (l >> 4);
        const high = src[qh + l];
        const a = src[ql + l];
        const c = src[ql + l + 32];
        out[y + l] = q6Scale[is] * (((a & 0x0f) | ((high & 3) << 4)) - 32);
        out[y + l + 32] = q6Scale[is + 2] * (((c & 0x0f) | (((high >> 2) & 3) << 4)) - 32);
        out[y + l + 64] = q6Scale[is + 4] * (((a >> 4) | (((high >> 4) & 3) << 4)) - 32);
        out[y + l + 96] = q6Scale[is + 6] * (((c >> 4) | (((high >> 6) & 3) << 4)) - 32);
      }
    }
  }
}
