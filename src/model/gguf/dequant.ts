/**
 * Tensor data of a ggml type to float32, element for element as llama.cpp's ggml-quants.c
 * (`dequantize_row_*`, `ggml_fp16_to_fp32`, `ggml_bf16_to_fp32`) and gguf-py's `gguf.quants.dequantize`
 * compute it. The output is in the data's own order, which is row-major in the torch shape (GGUF dims
 * reversed). F32, F16 and BF16 keep their exact bits, NaN payloads included.
 */
import { dequantQ4_K, dequantQ5_K, dequantQ6_K } from './dequant_k';
import { dequantQ4_0, dequantQ4_1, dequantQ5_0, dequantQ5_1, dequantQ8_0 } from './dequant_q';
import { GgufError } from './error';
import { halfTable } from './half';
import { byteSize, ggmlType, ggmlTypeId, ggmlTypeName } from './types';

type Decoder = (src: Uint8Array, out: Float32Array, blocks: number) => void;

function f32(src: Uint8Array, out: Float32Array): void {
  new Uint8Array(out.buffer, out.byteOffset, out.byteLength).set(src);
}

/** Copied as bits: a NaN read into a JS number may lose its payload (x86 quiets signalling NaNs). */
function f16(src: Uint8Array, out: Float32Array, n: number): void {
  const h = halfTable();
  const table = new Uint32Array(h.buffer, h.byteOffset, h.length);
  const bits = new Uint32Array(out.buffer, out.byteOffset, n);
  for (let i = 0, p = 0; i < n; i++, p += 2) bits[i] = table[src[p] | (src[p + 1] << 8)];
}

/** BF16 is the high half of a float32: the widening is a shift of the bits. */
function bf16(src: Uint8Array, out: Float32Array, n: number): void {
  const bits = new Uint32Array(out.buffer, out.byteOffset, n);
  for (let i = 0, p = 0; i < n; i++, p += 2) bits[i] = (src[p] << 16) | (src[p + 1] << 24);
}

const DECODERS = new Map<number, Decoder>(
  (
    [
      ['F32', f32],
      ['F16', f16],
      ['BF16', bf16],
      ['Q8_0', dequantQ8_0],
      ['Q4_0', dequantQ4_0],
      ['Q4_1', dequantQ4_1],
      ['Q5_0', dequantQ5_0],
      ['Q5_1', dequantQ5_1],
      ['Q4_K', dequantQ4_K],
      ['Q5_K', dequantQ5_K],
      ['Q6_K', dequantQ6_K],
    ] as const
  ).map(([name, decode]) => [ggmlTypeId(name), decode]),
);

/** The types `dequantize` decodes, by name, for messages (`F32, F16, ..., Q6_K`). */
export const DEQUANTIZABLE = [...DECODERS.keys()].map(ggmlTypeName).join(', ');

/** Whether `dequantize` decodes this type id. */
export function isDequantizable(typeId: number): boolean {
  return DECODERS.has(typeId);
}

/**
 * Decodes `elements` elements of type `typeId` from `src` (exactly their bytes) into a new Float32Array.
 * @throws GgufError for a type not in DEQUANTIZABLE, or a byte length that is not the elements' size
 */
export function dequantize(typeId: number, src: Uint8Array, elements: number): Float32Array {
  const decode = DECODERS.get(typeId);
  if (!decode) throw new GgufError(`type ${ggmlTypeName(typeId)} (${typeId}) cannot be dequantised; allowed: ${DEQUANTIZABLE}`);
  const want = byteSize(typeId, elements);
  if (src.length !== want) throw new GgufError(`${elements} elements of ${ggmlTypeName(typeId)} take ${want} bytes, got ${src.length}`);
  const out = new Float32Array(elements);
  decode(src, out, elements / ggmlType(typeId)!.blockSize);
  return out;
}
