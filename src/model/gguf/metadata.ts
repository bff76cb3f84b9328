/**
 * GGUF metadata values (gguf-py's `GGUFValueType`): a u32 type tag, then the value. Arrays carry their item
 * type and a u64 count; 64-bit integers come back as numbers when they fit a double exactly, else bigints.
 */
import type { HeaderCursor } from './cursor';
import { GgufError } from './error';

/** Value type names by their tag in the file. */
export const GGUF_VALUE_TYPES = [
  'UINT8',
  'INT8',
  'UINT16',
  'INT16',
  'UINT32',
  'INT32',
  'FLOAT32',
  'BOOL',
  'STRING',
  'ARRAY',
  'UINT64',
  'INT64',
  'FLOAT64',
] as const;

export type GgufValueType = (typeof GGUF_VALUE_TYPES)[number];

export type GgufValue = number | bigint | boolean | string | GgufValue[];

/** One metadata entry: its value type (and for an array, the item type) and the value. */
export interface GgufMetadataEntry {
  type: GgufValueType;
  itemType?: GgufValueType;
  value: GgufValue;
}

/** The fewest bytes one value of each type takes, to refuse an array count the file cannot hold. */
const MIN_BYTES = [1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8];

const ALLOWED = GGUF_VALUE_TYPES.map((name, tag) => `${tag} (${name})`).join(', ');

function valueType(c: HeaderCursor): number {
  const at = c.pos;
  const tag = c.u32();
  if (tag >= GGUF_VALUE_TYPES.length)
    throw new GgufError(`${c.file}: ${c.context} has value type ${tag} at byte ${at}; allowed: ${ALLOWED}`);
  return tag;
}

function narrow(v: bigint): number | bigint {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
}

function readValue(c: HeaderCursor, tag: number): GgufValue {
  switch (GGUF_VALUE_TYPES[tag]) {
    case 'UINT8':
      return c.u8();
    case 'INT8':
      return c.i8();
    case 'UINT16':
      return c.u16();
    case 'INT16':
      return c.i16();
    case 'UINT32':
      return c.u32();
    case 'INT32':
      return c.i32();
    case 'FLOAT32':
      return c.f32();
    case 'BOOL':
      return c.u8() !== 0;
    case 'STRING':
      return c.string();
    case 'UINT64':
      return narrow(c.u64());
    case 'INT64':
      return narrow(c.i64());
    case 'FLOAT64':
      return c.f64();
    default:
      return readArray(c).value;
  }
}

function readArray(c: HeaderCursor): { itemType: GgufValueType; value: GgufValue[] } {
  const item = valueType(c);
  const at = c.pos;
  const count = c.safeU64('array length');
  if (count * MIN_BYTES[item] > c.remaining()) {
    throw new GgufError(
      `${c.file}: ${c.context}: an array of ${count} ${GGUF_VALUE_TYPES[item]} at byte ${at} runs past the end of the file (${c.size} bytes)`,
    );
  }
  const value: GgufValue[] = new Array(count);
  for (let i = 0; i < count; i++) value[i] = readValue(c, item);
  return { itemType: GGUF_VALUE_TYPES[item], value };
}

/**
 * Reads `count` key/value pairs at the cursor, in file order.
 * @throws GgufError on an unknown value type, a duplicate key, or a string or array past the end of the file
 */
export function readMetadata(c: HeaderCursor, count: number): Map<string, GgufMetadataEntry> {
  const out = new Map<string, GgufMetadataEntry>();
  for (let i = 0; i < count; i++) {
    c.context = `metadata entry ${i}`;
    const key = c.string();
    if (out.has(key)) throw new GgufError(`${c.file}: metadata key ${key} appears twice`);
    c.context = `metadata key ${key}`;
    const tag = valueType(c);
    if (GGUF_VALUE_TYPES[tag] === 'ARRAY') out.set(key, { type: 'ARRAY', ...readArray(c) });
    else out.set(key, { type: GGUF_VALUE_TYPES[tag], value: readValue(c, tag) });
  }
  return out;
}
