/**
 * The ggml tensor types a GGUF file may name, by the ids of llama.cpp's ggml.h (gguf-py's
 * `GGMLQuantizationType`), with gguf-py's `GGML_QUANT_SIZES`: a type stores its elements in blocks of
 * `blockSize` elements, each `typeSize` bytes. Ids missing here (4, 5, 31-33, 36-38) were removed from
 * ggml and no current file uses them.
 */
import { GgufError } from './error';

/** One ggml tensor type: its id in a GGUF file, its name, elements per block and bytes per block. */
export interface GgmlType {
  id: number;
  name: string;
  blockSize: number;
  typeSize: number;
}

/** [name, id, elements per block, bytes per block]; the K-quants' super-block is QK_K = 256 elements. */
const TABLE: ReadonlyArray<readonly [string, number, number, number]> = [
  ['F32', 0, 1, 4],
  ['F16', 1, 1, 2],
  ['Q4_0', 2, 32, 2 + 16],
  ['Q4_1', 3, 32, 2 + 2 + 16],
  ['Q5_0', 6, 32, 2 + 4 + 16],
  ['Q5_1', 7, 32, 2 + 2 + 4 + 16],
  ['Q8_0', 8, 32, 2 + 32],
  ['Q8_1', 9, 32, 4 + 4 + 32],
  ['Q2_K', 10, 256, 2 + 2 + 16 + 64],
  ['Q3_K', 11, 256, 2 + 64 + 32 + 12],
  ['Q4_K', 12, 256, 2 + 2 + 128 + 12],
  ['Q5_K', 13, 256, 2 + 2 + 128 + 32 + 12],
  ['Q6_K', 14, 256, 2 + 128 + 64 + 16],
  ['Q8_K', 15, 256, 4 + 256 + 32],
  ['IQ2_XXS', 16, 256, 2 + 64],
  ['IQ2_XS', 17, 256, 2 + 64 + 8],
  ['IQ3_XXS', 18, 256, 2 + 64 + 32],
  ['IQ1_S', 19, 256, 2 + 32 + 16],
  ['IQ4_NL', 20, 32, 2 + 16],
  ['IQ3_S', 21, 256, 2 + 64 + 32 + 8 + 4],
  ['IQ2_S', 22, 256, 2 + 64 + 16],
  ['IQ4_XS', 23, 256, 2 + 2 + 128 + 4],
  ['I8', 24, 1, 1],
  ['I16', 25, 1, 2],
  ['I32', 26, 1, 4],
  ['I64', 27, 1, 8],
  ['F64', 28, 1, 8],
  ['IQ1_M', 29, 256, 32 + 16 + 8],
  ['BF16', 30, 1, 2],
  ['TQ1_0', 34, 256, 2 + 4 * 13],
  ['TQ2_0', 35, 256, 2 + 64],
  ['MXFP4', 39, 32, 1 + 16],
  ['NVFP4', 40, 64, 4 + 32],
  ['Q1_0', 41, 128, 2 + 16],
];

const BY_ID = new Map<number, GgmlType>(TABLE.map(([name, id, blockSize, typeSize]) => [id, { id, name, blockSize, typeSize }]));

/** The type with this id, or undefined when ggml has none. */
export function ggmlType(id: number): GgmlType | undefined {
  return BY_ID.get(id);
}

/** The type's name (`Q4_K`), or `unknown` for an id ggml does not define. */
export function ggmlTypeName(id: number): string {
  return BY_ID.get(id)?.name ?? 'unknown';
}

/** The id of a type by name (`Q4_K` -> 12). @throws GgufError for a name ggml does not define */
export function ggmlTypeId(name: string): number {
  const found = TABLE.find(([n]) => n === name);
  if (!found) throw new GgufError(`ggml type ${JSON.stringify(name)} does not exist; allowed: ${TABLE.map(([n]) => n).join(', ')}`);
  return found[1];
}

/**
 * Bytes that `elements` elements of a type occupy.
 * @throws GgufError for an unknown id, or a count that is not a whole number of blocks
 */
export function byteSize(typeId: number, elements: number): number {
  const t = BY_ID.get(typeId);
  if (!t) throw new GgufError(`ggml type id ${typeId} does not exist`);
  if (!Number.isSafeInteger(elements) || elements < 0 || elements % t.blockSize !== 0) {
    throw new GgufError(`${elements} elements of ${t.name} are not a whole number of ${t.blockSize}-element blocks`);
  }
  return (elements / t.blockSize) * t.typeSize;
}
