/**
 * The safetensors format (HF, https://huggingface.co/docs/safetensors): 8-byte little-endian header length N,
 * an N-byte UTF-8 JSON header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}},
 * then the raw little-endian data. Written as the Python `safetensors` writer does, byte for byte: tensors
 * contiguous (readers reject gaps between them), wider element types first and then by name (so every
 * tensor stays aligned to its element size), the header padded with spaces to a multiple of 8.
 */

/** Supported element types. F16/BF16 data are raw Uint16Array bit patterns. */
export type SafeDtype = 'F32' | 'I32' | 'F16' | 'BF16';

/** One tensor: row-major data of prod(shape) elements. */
export interface SafeTensor {
  dtype: SafeDtype;
  shape: number[];
  data: Float32Array | Int32Array | Uint16Array;
}

const BYTES: Record<SafeDtype, number> = { F32: 4, I32: 4, F16: 2, BF16: 2 };

/** A tensor whose data is made when it is written: one at a time, so a caller's host copies need not coexist. */
export interface LazySafeTensor {
  dtype: SafeDtype;
  shape: number[];
  read: () => SafeTensor['data'];
}

function checkHeader(name: string, t: Pick<SafeTensor, 'dtype' | 'shape'>): void {
  if (!(t.dtype in BYTES)) throw new Error(`safetensors: tensor ${name} dtype ${JSON.stringify(t.dtype)}; allowed: F32, I32, F16, BF16`);
  if (t.shape.some((d) => !Number.isInteger(d) || d < 0)) throw new Error(`safetensors: tensor ${name} shape [${t.shape}] is invalid`);
}

function checkTensor(name: string, t: SafeTensor): void {
  checkHeader(name, t);
  const n = t.shape.reduce((a, b) => a * b, 1);
  if (t.data.length !== n) throw new Error(`safetensors: tensor ${name} has ${t.data.length} elements, shape [${t.shape}] needs ${n}`);
  const want = t.dtype === 'F32' ? Float32Array : t.dtype === 'I32' ? Int32Array : Uint16Array;
  if (!(t.data instanceof want))
    throw new Error(`safetensors: tensor ${name} dtype ${t.dtype} needs a ${want.name}, got ${t.data.constructor.name}`);
}

/** Data order of the Python writer: element types in its Dtype enum order, descending (F32 > I32 > BF16 > F16). */
const WRITE_RANK: Record<SafeDtype, number> = { F32: 3, I32: 2, BF16: 1, F16: 0 };

/**
 * Serializes tensors with optional string metadata, laid out as the Python writer lays them out.
 * @returns the file bytes
 * @throws Error on an unsupported dtype, a data/shape size mismatch, or a wrong typed-array kind.
 */
export function encodeSafetensors(tensors: Record<string, SafeTensor>, metadata?: Record<string, string>): Uint8Array {
  for (const [name, t] of Object.entries(tensors)) checkTensor(name, t);
  const lazy = Object.entries(tensors).map(([name, t]): [string, LazySafeTensor] => [name, { ...t, read: () => t.data }]);
  return encodeLazySafetensors(Object.fromEntries(lazy), metadata);
}

/**
 * encodeSafetensors for tensors whose data is read as it is copied into the file, each read's array dropped before
 * the next one is made.
 * @throws Error as encodeSafetensors (a read's data is checked against its dtype and shape)
 */
export function encodeLazySafetensors(tensors: Record<string, LazySafeTensor>, metadata?: Record<string, string>): Uint8Array {
  for (const [name, t] of Object.entries(tensors)) checkHeader(name, t);
  const names = Object.keys(tensors).sort(
    (a, b) => WRITE_RANK[tensors[b].dtype] - WRITE_RANK[tensors[a].dtype] || (a < b ? -1 : a > b ? 1 : 0),
  );
  // Built entry by entry: a JS object would move integer-like tensor names ahead of the others.
  const entries: string[] = [];
  if (metadata && Object.keys(metadata).length > 0) entries.push(`"__metadata__":${JSON.stringify(metadata)}`);
  let offset = 0;
  const offsets: number[] = [];
  for (const name of names) {
    const t = tensors[name];
    const nbytes = t.shape.reduce((a, b) => a * b, 1) * BYTES[t.dtype];
    offsets.push(offset);
    entries.push(`${JSON.stringify(name)}:${JSON.stringify({ dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + nbytes] })}`);
    offset += nbytes;
  }
  const unpadded = new TextEncoder().encode(`{${entries.join(',')}}`);
  const headerLength = Math.ceil(unpadded.length / 8) * 8;
  const out = new Uint8Array(8 + headerLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLength), true);
  out.set(unpadded, 8);
  out.fill(0x20, 8 + unpadded.length, 8 + headerLength); // spaces: the header stays valid JSON
  const base = 8 + headerLength;
  names.forEach((name, i) => {
    const { dtype, shape, read } = tensors[name];
    const data = read();
    checkTensor(name, { dtype, shape, data });
    // Typed arrays are little-endian on every platform Node runs on.
    out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), base + offsets[i]);
  });
  return out;
}

/** One header entry: element type, shape and [begin, end) byte offsets into the data section. */
export interface SafeTensorInfo {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

/**
 * The header length N from a file's first 8 bytes (little-endian u64).
 * @throws Error when fewer than 8 bytes are given
 */
export function safetensorsHeaderLength(first8: Uint8Array): number {
  if (first8.length < 8) throw new Error(`safetensors: file is ${first8.length} bytes, shorter than the 8-byte header length`);
  return Number(new DataView(first8.buffer, first8.byteOffset, 8).getBigUint64(0, true));
}

/**
 * Parses the N-byte JSON header (after the 8-byte length) into tensor entries and the __metadata__ map.
 * @throws Error when it is not JSON or an entry lacks dtype, shape or data_offsets
 */
export function parseSafetensorsHeader(headerBytes: Uint8Array): {
  entries: Record<string, SafeTensorInfo>;
  metadata: Record<string, string>;
} {
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder().decode(headerBytes));
  } catch (e) {
    throw new Error(`safetensors: header is not valid JSON (${(e as Error).message})`);
  }
  const entries: Record<string, SafeTensorInfo> = {};
  let metadata: Record<string, string> = {};
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = entry as Record<string, string>;
      continue;
    }
    const e = entry as Partial<SafeTensorInfo> | null;
    if (!e || typeof e.dtype !== 'string' || !Array.isArray(e.shape) || !Array.isArray(e.data_offsets)) {
      throw new Error(`safetensors: header entry ${name} needs dtype, shape and data_offsets`);
    }
    entries[name] = e as SafeTensorInfo;
  }
  return { entries, metadata };
}

/**
 * Parses safetensors bytes. Data are copied into fresh aligned typed arrays.
 * @returns tensors by name and the __metadata__ map ({} when absent)
 * @throws Error on a truncated file, a header that is not JSON, an unsupported dtype (e.g. F64, I64) or
 *   data offsets that disagree with the shape.
 */
export function decodeSafetensors(bytes: Uint8Array): { tensors: Record<string, SafeTensor>; metadata: Record<string, string> } {
  const n = safetensorsHeaderLength(bytes);
  if (8 + n > bytes.length) throw new Error(`safetensors: header length ${n} exceeds the file size ${bytes.length}`);
  const { entries, metadata } = parseSafetensorsHeader(bytes.subarray(8, 8 + n));
  const base = 8 + n;
  const tensors: Record<string, SafeTensor> = {};
  for (const [name, e] of Object.entries(entries)) {
    if (!(e.dtype in BYTES)) throw new Error(`safetensors: tensor ${name} dtype ${e.dtype} is not supported; allowed: F32, I32, F16, BF16`);
    const dtype = e.dtype as SafeDtype;
    const count = e.shape.reduce((a, b) => a * b, 1);
    const [b0, b1] = e.data_offsets;
    if (b1 - b0 !== count * BYTES[dtype] || base + b1 > bytes.length) {
      throw new Error(`safetensors: tensor ${name} data_offsets [${b0}, ${b1}] do not fit shape [${e.shape}] ${dtype} or the file`);
    }
    const raw = new Uint8Array(bytes.subarray(base + b0, base + b1)); // a copy, aligned and detached (Buffer#slice would be a view)
    const data =
      dtype === 'F32' ? new Float32Array(raw.buffer) : dtype === 'I32' ? new Int32Array(raw.buffer) : new Uint16Array(raw.buffer);
    tensors[name] = { dtype, shape: [...e.shape], data };
  }
  return { tensors, metadata };
}

/** IEEE half (F16 bits) -> float. */
export function f16ToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

/**
 * Converts a decoded tensor's data to Float32Array (F32 as is; F16 and BF16 widened exactly; I32 converted).
 */
export function toFloat32(t: SafeTensor): Float32Array {
  if (t.dtype === 'F32') return t.data as Float32Array;
  const out = new Float32Array(t.data.length);
  if (t.dtype === 'I32') {
    out.set(t.data as Int32Array);
  } else if (t.dtype === 'BF16') {
    const u32 = new Uint32Array(out.buffer);
    const src = t.data as Uint16Array;
    for (let i = 0; i < src.length; i++) u32[i] = src[i] << 16;
  } else {
    const src = t.data as Uint16Array;
    for (let i = 0; i < src.length; i++) out[i] = f16ToFloat(src[i]);
  }
  return out;
}
