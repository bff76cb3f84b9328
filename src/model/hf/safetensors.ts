/**
 * The safetensors format (HF, https://huggingface.co/docs/safetensors): 8-byte little-endian header length N,
 * an N-byte UTF-8 JSON header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}},
 * then the raw little-endian data. Written as the Python `safetensors` writer does, byte for byte: tensors
 * contiguous (readers reject gaps between them), wider element types first and then by name (so every
 * tensor stays aligned to its element size), the header padded with spaces to a multiple of 8.
 */
import type { ObjectSink, StreamedObject } from '../../contract';

/** Supported element types. F16/BF16 data are raw Uint16Array bit patterns. */
export type SafeDtype = 'F32' | 'I32' | 'F16' | 'BF16';

/** One tensor: row-major data of prod(shape) elements. */
export interface SafeTensor {
  dtype: SafeDtype;
  shape: number[];
  data: Float32Array | Int32Array | Uint16Array;
}

const BYTES: Record<SafeDtype, number> = { F32: 4, I32: 4, F16: 2, BF16: 2 };

function checkTensor(name: string, t: SafeTensor): void {
  if (!(t.dtype in BYTES)) throw new Error(`safetensors: tensor ${name} dtype ${JSON.stringify(t.dtype)}; allowed: F32, I32, F16, BF16`);
  const n = t.shape.reduce((a, b) => a * b, 1);
  if (t.shape.some((d) => !Number.isInteger(d) || d < 0)) throw new Error(`safetensors: tensor ${name} shape [${t.shape}] is invalid`);
  if (t.data.length !== n) throw new Error(`safetensors: tensor ${name} has ${t.data.length} elements, shape [${t.shape}] needs ${n}`);
  const want = t.dtype === 'F32' ? Float32Array : t.dtype === 'I32' ? Int32Array : Uint16Array;
  if (!(t.data instanceof want))
    throw new Error(`safetensors: tensor ${name} dtype ${t.dtype} needs a ${want.name}, got ${t.data.constructor.name}`);
}

/** Data order of the Python writer: element types in its Dtype enum order, descending (F32 > I32 > BF16 > F16). */
const WRITE_RANK: Record<SafeDtype, number> = { F32: 3, I32: 2, BF16: 1, F16: 0 };

/** What a header records of a tensor: element type and shape. */
export type SafeTensorSpec = Pick<SafeTensor, 'dtype' | 'shape'>;

const byteLength = (t: SafeTensorSpec) => t.shape.reduce((a, b) => a * b, 1) * BYTES[t.dtype];

/**
 * The file layout the Python writer gives these tensors: the 8-byte header length and the padded header (`head`),
 * the data order, each tensor's offset into the data section and the file size.
 */
function layout(
  specs: Record<string, SafeTensorSpec>,
  metadata?: Record<string, string>,
): { head: Uint8Array; names: string[]; offsets: number[]; bytes: number } {
  const names = Object.keys(specs).sort((a, b) => WRITE_RANK[specs[b].dtype] - WRITE_RANK[specs[a].dtype] || (a < b ? -1 : a > b ? 1 : 0));
  // Built entry by entry: a JS object would move integer-like tensor names ahead of the others.
  const entries: string[] = [];
  if (metadata && Object.keys(metadata).length > 0) entries.push(`"__metadata__":${JSON.stringify(metadata)}`);
  let offset = 0;
  const offsets: number[] = [];
  for (const name of names) {
    const t = specs[name];
    const nbytes = byteLength(t);
    offsets.push(offset);
    entries.push(`${JSON.stringify(name)}:${JSON.stringify({ dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + nbytes] })}`);
    offset += nbytes;
  }
  const unpadded = new TextEncoder().encode(`{${entries.join(',')}}`);
  const headerLength = Math.ceil(unpadded.length / 8) * 8;
  const head = new Uint8Array(8 + headerLength);
  new DataView(head.buffer).setBigUint64(0, BigInt(headerLength), true);
  head.set(unpadded, 8);
  head.fill(0x20, 8 + unpadded.length); // spaces: the header stays valid JSON
  return { head, names, offsets, bytes: head.length + offset };
}

/** A typed array's bytes, as a view (typed arrays are little-endian on every platform Node runs on). */
const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/**
 * Serializes tensors with optional string metadata, laid out as the Python writer lays them out.
 * @returns the file bytes
 * @throws Error on an unsupported dtype, a data/shape size mismatch, or a wrong typed-array kind.
 */
export function encodeSafetensors(tensors: Record<string, SafeTensor>, metadata?: Record<string, string>): Uint8Array {
  for (const [name, t] of Object.entries(tensors)) checkTensor(name, t);
  const { head, names, offsets, bytes } = layout(tensors, metadata);
  const out = new Uint8Array(bytes);
  out.set(head);
  names.forEach((name, i) => {
    out.set(bytesOf(tensors[name].data), head.length + offsets[i]);
  });
  return out;
}

/**
 * The same file as encodeSafetensors, as a stream: the header, then each tensor's data in file order as `data(name)`
 * yields it (pieces of any size, e.g. row blocks read from a device), never one buffer for the whole file.
 * @throws Error (from the stream) when a tensor's pieces do not add up to its shape's size
 */
export function safetensorsStream(
  specs: Record<string, SafeTensorSpec>,
  metadata: Record<string, string> | undefined,
  data: (name: string) => AsyncIterable<ArrayBufferView> | Iterable<ArrayBufferView>,
): StreamedObject {
  for (const [name, t] of Object.entries(specs)) {
    if (!(t.dtype in BYTES)) throw new Error(`safetensors: tensor ${name} dtype ${JSON.stringify(t.dtype)}; allowed: F32, I32, F16, BF16`);
  }
  const { head, names, bytes } = layout(specs, metadata);
  return {
    bytes,
    async *chunks() {
      yield head;
      for (const name of names) {
        const want = byteLength(specs[name]);
        let got = 0;
        for await (const piece of data(name)) {
          got += piece.byteLength;
          yield bytesOf(piece);
        }
        if (got !== want) throw new Error(`safetensors: tensor ${name} gave ${got} data bytes, shape [${specs[name].shape}] needs ${want}`);
      }
    },
  };
}

/** encodeSafetensors's file as a stream of each tensor's data as it is (checked as encodeSafetensors checks it). */
export function safetensorsStreamOf(tensors: Record<string, SafeTensor>, metadata?: Record<string, string>): StreamedObject {
  for (const [name, t] of Object.entries(tensors)) checkTensor(name, t);
  return safetensorsStream(tensors, metadata, (name) => [tensors[name].data]);
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

/** A streamed file's bytes in one buffer (for tests and small files; checkpoints stream them to the store). */
export async function streamedBytes(file: StreamedObject): Promise<Uint8Array> {
  const out = new Uint8Array(file.bytes);
  let at = 0;
  for await (const piece of file.chunks()) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}

/** A decoded file: tensors by name and the __metadata__ map ({} when absent). */
export interface DecodedSafetensors {
  tensors: Record<string, SafeTensor>;
  metadata: Record<string, string>;
}

/** A tensor being filled: its [begin, end) in the data section and the bytes of its (fresh, aligned) array. */
interface Slot {
  name: string;
  begin: number;
  end: number;
  bytes: Uint8Array;
}

const NO_BYTES = new Uint8Array(0);

/**
 * Decodes a safetensors file fed in pieces of any size (an object read from the store), copying each piece's bytes
 * straight into its tensor's array: no buffer of the whole file. Tensors must not overlap (the Python reader
 * refuses such files too); bytes in gaps between them are skipped.
 */
export class SafetensorsDecoder implements ObjectSink {
  private head: Uint8Array = new Uint8Array(8);
  private headFill = 0;
  private headerLength = -1;
  private slots: Slot[] = [];
  private next = 0;
  private position = 0; // bytes of the data section seen
  private result: DecodedSafetensors | null = null;

  /**
   * @param fileBytes the file's size when known (an object's manifest says it): a header claiming more is refused
   *   before any allocation
   * @param onTensor when given, each tensor is handed to it as soon as its last byte is in, and the decoder keeps no
   *   reference to it (finish() then lists none): a consumer that moves it elsewhere frees it tensor by tensor
   */
  constructor(
    private readonly fileBytes?: number,
    private readonly onTensor?: (name: string, tensor: SafeTensor) => void,
  ) {}

  /** Takes the next piece of the file. @throws Error on a header that is not JSON, an unsupported dtype or offsets that do not fit */
  write(chunk: Uint8Array): void {
    let at = 0;
    while (!this.result && at < chunk.length) {
      const take = Math.min(this.head.length - this.headFill, chunk.length - at);
      this.head.set(chunk.subarray(at, at + take), this.headFill);
      this.headFill += take;
      at += take;
      if (this.headFill < this.head.length) return;
      if (this.headerLength < 0) this.startHeader();
      else this.parseHeader();
    }
    if (at < chunk.length) this.fill(chunk.subarray(at));
  }

  /** The decoded file. @throws Error when the file ended early (shorter than its header says) */
  finish(): DecodedSafetensors {
    if (this.headerLength < 0) throw new Error(`safetensors: file is ${this.headFill} bytes, shorter than the 8-byte header length`);
    if (!this.result) throw new Error(`safetensors: header length ${this.headerLength} exceeds the file size ${8 + this.headFill}`);
    const short = this.slots.find((s) => s.end > this.position);
    if (short)
      throw new Error(`safetensors: tensor ${short.name} data_offsets end at ${short.end}, the file has ${this.position} data bytes`);
    return this.result;
  }

  private startHeader(): void {
    this.headerLength = safetensorsHeaderLength(this.head);
    if (this.fileBytes !== undefined && 8 + this.headerLength > this.fileBytes)
      throw new Error(`safetensors: header length ${this.headerLength} exceeds the file size ${this.fileBytes}`);
    this.head = new Uint8Array(this.headerLength);
    this.headFill = 0;
    if (this.headerLength === 0) this.parseHeader();
  }

  private parseHeader(): void {
    const { entries, metadata } = parseSafetensorsHeader(this.head);
    const dataBytes = this.fileBytes === undefined ? Number.POSITIVE_INFINITY : this.fileBytes - 8 - this.headerLength;
    const tensors: Record<string, SafeTensor> = {};
    for (const [name, e] of Object.entries(entries)) {
      if (!(e.dtype in BYTES))
        throw new Error(`safetensors: tensor ${name} dtype ${e.dtype} is not supported; allowed: F32, I32, F16, BF16`);
      const dtype = e.dtype as SafeDtype;
      const [b0, b1] = e.data_offsets;
      if (!(b0 >= 0) || b1 - b0 !== byteLength({ dtype, shape: e.shape }) || b1 > dataBytes) {
        throw new Error(`safetensors: tensor ${name} data_offsets [${b0}, ${b1}] do not fit shape [${e.shape}] ${dtype} or the file`);
      }
      const buffer = new ArrayBuffer(b1 - b0);
      const data = dtype === 'F32' ? new Float32Array(buffer) : dtype === 'I32' ? new Int32Array(buffer) : new Uint16Array(buffer);
      tensors[name] = { dtype, shape: [...e.shape], data };
      if (b1 > b0) this.slots.push({ name, begin: b0, end: b1, bytes: new Uint8Array(buffer) });
    }
    this.slots.sort((a, b) => a.begin - b.begin);
    for (let i = 1; i < this.slots.length; i++) {
      const [a, b] = [this.slots[i - 1], this.slots[i]];
      if (b.begin < a.end) throw new Error(`safetensors: tensors ${a.name} and ${b.name} overlap; allowed: disjoint data_offsets`);
    }
    this.result = { tensors, metadata };
    for (const [name, t] of Object.entries(tensors)) if (t.data.length === 0) this.handOver(name);
  }

  /** Gives a complete tensor to onTensor and forgets it (a no-op without onTensor). */
  private handOver(name: string): void {
    if (!this.onTensor || !this.result) return;
    const t = this.result.tensors[name];
    delete this.result.tensors[name];
    this.onTensor(name, t);
  }

  /** Copies data-section bytes [position, position + piece.length) into the tensors they belong to. */
  private fill(piece: Uint8Array): void {
    const from = this.position;
    const to = from + piece.length;
    while (this.next < this.slots.length && this.slots[this.next].end <= from) this.next++;
    for (let i = this.next; i < this.slots.length && this.slots[i].begin < to; i++) {
      const s = this.slots[i];
      const lo = Math.max(from, s.begin);
      const hi = Math.min(to, s.end);
      s.bytes.set(piece.subarray(lo - from, hi - from), lo - s.begin);
      if (hi === s.end && this.onTensor) {
        s.bytes = NO_BYTES;
        this.handOver(s.name);
      }
    }
    this.position = to;
  }
}

/**
 * Parses safetensors bytes. Data are copied into fresh aligned typed arrays.
 * @returns tensors by name and the __metadata__ map ({} when absent)
 * @throws Error on a truncated file, a header that is not JSON, an unsupported dtype (e.g. F64, I64),
 *   data offsets that disagree with the shape, or overlapping tensors.
 */
export function decodeSafetensors(bytes: Uint8Array): DecodedSafetensors {
  const decoder = new SafetensorsDecoder(bytes.length);
  decoder.write(bytes);
  return decoder.finish();
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
