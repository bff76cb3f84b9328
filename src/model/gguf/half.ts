/**
 * IEEE half (F16) bits to float32, as ggml's GGML_FP16_TO_FP32 and numpy's float16 -> float32 cast give it:
 * exact for every finite value, subnormals included, and infinities and NaNs keep their sign and payload (in
 * the table's bits: loading a signalling NaN into a JS number may quiet it, so NaNs are copied as bits).
 * One 65,536-entry table, built on first use, makes a scale a single load in the dequantisers' inner loops.
 */

let table: Float32Array | undefined;

function build(): Float32Array {
  const t = new Float32Array(65536);
  const bits = new Uint32Array(t.buffer);
  for (let h = 0; h < 65536; h++) {
    const e = (h >> 10) & 0x1f;
    const f = h & 0x3ff;
    const sign = h & 0x8000 ? -1 : 1;
    if (e === 0x1f) bits[h] = ((h & 0x8000) << 16) | 0x7f800000 | (f << 13);
    else t[h] = sign * (e === 0 ? f * 2 ** -24 : (1024 + f) * 2 ** (e - 25));
  }
  return t;
}

/** The float32 value of every F16 bit pattern, indexed by the pattern. */
export function halfTable(): Float32Array {
  table ??= build();
  return table;
}
