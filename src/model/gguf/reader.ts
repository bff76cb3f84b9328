/**
 * GGUF files (llama.cpp's gguf.cpp / gguf-py's GGUFReader), versions 2 and 3, little-endian:
 *
 *   "GGUF", u32 version, u64 tensor count, u64 metadata count,
 *   metadata: {string key, u32 value type, value} ...,
 *   tensor infos: {string name, u32 n_dims, u64 dims[n_dims], u32 ggml type, u64 offset} ...,
 *   padding to `general.alignment` (default 32), then the data section; each offset is relative to it.
 *
 * A string is a u64 byte length and UTF-8 bytes. Dims are listed innermost first (ggml's ne[0] is the
 * contiguous one), the reverse of the torch/numpy shape. `readGguf` reads only the header and checks every
 * tensor's extent, so a truncated file is refused before any weight is read; tensor data is read per tensor.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { HeaderCursor } from './cursor';
import { DEQUANTIZABLE, dequantize, isDequantizable } from './dequant';
import { GgufError } from './error';
import { type GgufMetadataEntry, readMetadata } from './metadata';
import { ggmlType, ggmlTypeName } from './types';

const MAGIC = 'GGUF';
const VERSIONS = [2, 3];
const DEFAULT_ALIGNMENT = 32;
/** ggml's GGML_MAX_DIMS. */
const MAX_DIMS = 4;

/** One tensor's header entry and where its data lies in the file. */
export interface GgufTensorInfo {
  name: string;
  /** Dimensions as the file lists them, innermost first (ggml's ne[0], ne[1], ...). */
  dims: number[];
  /** The torch/numpy shape: `dims` reversed; `tensorFloat32` returns row-major data of this shape. */
  shape: number[];
  /** The ggml type id (types.ts) and its name. */
  type: number;
  typeName: string;
  elements: number;
  /** Offset into the data section, as the file gives it. */
  offset: number;
  /** The data's absolute byte range in the file: [start, start + byteLength). */
  start: number;
  byteLength: number;
}

/** A parsed GGUF header. */
export interface GgufFile {
  path: string;
  /** File size in bytes. */
  size: number;
  version: number;
  /** Metadata in file order. */
  metadata: Map<string, GgufMetadataEntry>;
  /** Tensors by name, in file order. */
  tensors: Map<string, GgufTensorInfo>;
  alignment: number;
  /** Absolute offset of the data section. */
  dataStart: number;
}

function readPreamble(c: HeaderCursor): { version: number; tensorCount: number; kvCount: number } {
  const magic = c.bytes(Math.min(4, c.size));
  if (magic.length < 4 || magic.toString('latin1') !== MAGIC) {
    const hex = [...magic].map((b) => b.toString(16).padStart(2, '0')).join(' ');
    throw new GgufError(`${c.file}: not a GGUF file: it starts with bytes [${hex}], expected "GGUF" (47 47 55 46)`);
  }
  c.context = 'the header';
  const version = c.u32();
  if (!VERSIONS.includes(version)) {
    const swapped = Buffer.alloc(4);
    swapped.writeUInt32BE(version);
    const bigEndian = VERSIONS.includes(swapped.readUInt32LE()) ? ' (a big-endian file; only little-endian files are read)' : '';
    throw new GgufError(`${c.file}: GGUF version ${version} is not supported${bigEndian}; allowed: ${VERSIONS.join(', ')}`);
  }
  const tensorCount = c.safeU64('tensor count');
  const kvCount = c.safeU64('metadata count');
  return { version, tensorCount, kvCount };
}

/** `general.alignment`: a u32 power of two, as gguf.cpp requires. */
function alignmentOf(file: string, metadata: Map<string, GgufMetadataEntry>): number {
  const entry = metadata.get('general.alignment');
  if (!entry) return DEFAULT_ALIGNMENT;
  const v = entry.value;
  if (entry.type !== 'UINT32' || typeof v !== 'number' || v === 0 || (v & (v - 1)) !== 0) {
    throw new GgufError(`${file}: metadata key general.alignment = ${String(v)} (${entry.type}); allowed: a UINT32 power of two`);
  }
  return v;
}

interface RawTensorInfo {
  name: string;
  dims: number[];
  type: number;
  offset: number;
}

function readTensorInfo(c: HeaderCursor, index: number): RawTensorInfo {
  c.context = `tensor info ${index}`;
  const name = c.string();
  c.context = `tensor ${name}`;
  const nDims = c.u32();
  if (nDims < 1 || nDims > MAX_DIMS) throw new GgufError(`${c.file}: tensor ${name} has ${nDims} dims; allowed: 1 to ${MAX_DIMS}`);
  const dims: number[] = [];
  for (let i = 0; i < nDims; i++) dims.push(c.safeU64(`dim ${i}`));
  const type = c.u32();
  const offset = c.safeU64('offset');
  return { name, dims, type, offset };
}

/** Checks one tensor against its type, the alignment and the file size, and places it. */
function placeTensor(file: string, size: number, alignment: number, dataStart: number, t: RawTensorInfo): GgufTensorInfo {
  const typeName = ggmlTypeName(t.type);
  const type = ggmlType(t.type);
  if (!type) throw new GgufError(`${file}: tensor ${t.name} has type ${typeName} (${t.type}); allowed: ${DEQUANTIZABLE}`);
  const elements = t.dims.reduce((a, b) => a * b, 1);
  if (!Number.isSafeInteger(elements)) throw new GgufError(`${file}: tensor ${t.name} dims [${t.dims}] have more than 2^53 elements`);
  if (t.dims[0] % type.blockSize !== 0) {
    throw new GgufError(
      `${file}: tensor ${t.name} (${typeName}) has rows of ${t.dims[0]} elements (dims [${t.dims}]); allowed: a multiple of the ${type.blockSize}-element ${typeName} block`,
    );
  }
  if (t.offset % alignment !== 0)
    throw new GgufError(`${file}: tensor ${t.name} offset ${t.offset} is not a multiple of the alignment ${alignment}`);
  const byteLength = (elements / type.blockSize) * type.typeSize;
  const start = dataStart + t.offset;
  if (start + byteLength > size) {
    throw new GgufError(
      `${file}: tensor ${t.name} (${typeName}, ${elements} elements) needs bytes ${start}..${start + byteLength} but the file has ${size} bytes (truncated?)`,
    );
  }
  return { ...t, shape: [...t.dims].reverse(), typeName, elements, start, byteLength };
}

/**
 * Reads a GGUF file's header, metadata and tensor infos, and checks that every tensor's type is a ggml type,
 * its rows are whole blocks, its offset is aligned and its data lies inside the file. Reads no tensor data.
 * @throws GgufError naming the file and what is wrong: the magic, the version, a metadata value type, a
 *   string or array past the end, a duplicate key or tensor, a tensor's type, dims, offset or extent
 */
export function readGguf(path: string): GgufFile {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const c = new HeaderCursor(fd, path, size);
    const { version, tensorCount, kvCount } = readPreamble(c);
    // Each metadata entry and tensor info takes at least 8 + 4 + 1 and 8 + 4 + 8 + 4 + 8 bytes.
    if (kvCount * 13 + tensorCount * 32 > c.remaining()) {
      throw new GgufError(`${path}: ${kvCount} metadata entries and ${tensorCount} tensors cannot fit in ${size} bytes (truncated?)`);
    }
    const metadata = readMetadata(c, kvCount);
    const alignment = alignmentOf(path, metadata);
    const raw: RawTensorInfo[] = [];
    for (let i = 0; i < tensorCount; i++) raw.push(readTensorInfo(c, i));
    const dataStart = Math.ceil(c.pos / alignment) * alignment;
    const tensors = new Map<string, GgufTensorInfo>();
    for (const t of raw) {
      if (tensors.has(t.name)) throw new GgufError(`${path}: tensor ${t.name} appears twice`);
      tensors.set(t.name, placeTensor(path, size, alignment, dataStart, t));
    }
    return { path, size, version, metadata, tensors, alignment, dataStart };
  } finally {
    closeSync(fd);
  }
}

function tensorNamed(g: GgufFile, name: string): GgufTensorInfo {
  const t = g.tensors.get(name);
  if (!t) throw new GgufError(`${g.path}: no tensor named ${name}`);
  return t;
}

/**
 * The raw bytes of one tensor, read from the file now.
 * @throws GgufError when the file no longer holds them
 */
export function tensorBytes(g: GgufFile, tensor: GgufTensorInfo | string): Uint8Array {
  const t = typeof tensor === 'string' ? tensorNamed(g, tensor) : tensor;
  const out = new Uint8Array(t.byteLength);
  const fd = openSync(g.path, 'r');
  try {
    for (let at = 0; at < out.length; ) {
      const got = readSync(fd, out, at, out.length - at, t.start + at);
      if (got === 0)
        throw new GgufError(
          `${g.path}: tensor ${t.name} ends at byte ${t.start + at}, before its ${t.byteLength} bytes (the file shrank?)`,
        );
      at += got;
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

/**
 * Checks that every tensor has a type `tensorFloat32` decodes, so a loader can refuse a file before reading
 * any weight.
 * @throws GgufError naming the first tensor of another type, and how many more there are
 */
export function checkDequantizable(g: GgufFile): void {
  const bad = [...g.tensors.values()].filter((t) => !isDequantizable(t.type));
  if (bad.length === 0) return;
  const more = bad.length > 1 ? ` (and ${bad.length - 1} more tensors of types not allowed)` : '';
  throw new GgufError(`${g.path}: tensor ${bad[0].name} has type ${bad[0].typeName} (${bad[0].type})${more}; allowed: ${DEQUANTIZABLE}`);
}

/**
 * One tensor as float32, row-major in `shape` (the torch order), decoded as ggml-quants.c decodes it.
 * @throws GgufError when its type is not one `dequantize` decodes, or its bytes cannot be read
 */
export function tensorFloat32(g: GgufFile, tensor: GgufTensorInfo | string): Float32Array {
  const t = typeof tensor === 'string' ? tensorNamed(g, tensor) : tensor;
  if (!isDequantizable(t.type))
    throw new GgufError(`${g.path}: tensor ${t.name} has type ${t.typeName} (${t.type}); allowed: ${DEQUANTIZABLE}`);
  return dequantize(t.type, tensorBytes(g, t), t.elements);
}
