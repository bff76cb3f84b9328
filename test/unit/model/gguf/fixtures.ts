/**
 * The GGUF fixtures gguf-py wrote (test/fixtures/gguf/make_gguf_fixtures.py), what gguf-py read back from
 * them (expected.json), and byte patches of copies for the error tests: the offsets of a metadata value or a
 * tensor info field are found by searching for the key or name as GGUF stores it (u64 length, then bytes).
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const FIXTURES = join(__dirname, '../../../fixtures/gguf');

export interface ExpectedTensor {
  name: string;
  type: string;
  dims: number[];
  sha256: string;
  samples: Array<[number, string]>;
}

export interface ExpectedEntry {
  type: string;
  itemType?: string;
  value: unknown;
}

export interface Expected {
  gguf_version: string;
  ggml_types: Record<string, [number, number, number]>;
  metadata: Record<string, ExpectedEntry>;
  files: Record<string, { keys: string[]; alignment: number; tensors: ExpectedTensor[] }>;
}

export const expected: Expected = JSON.parse(readFileSync(join(FIXTURES, 'expected.json'), 'utf8'));

/** Runs `body` with a fresh temporary directory, removed afterwards. */
export function withTempDir<T>(body: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-gguf-'));
  try {
    return body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Copies fixture `name` into `dir` as `as`, with `patch` applied to its bytes, and returns the copy's path. */
export function patchedCopy(name: string, dir: string, patch: (bytes: Buffer) => Buffer, as = name): string {
  const file = join(dir, as);
  copyFileSync(join(FIXTURES, name), file);
  writeFileSync(file, patch(readFileSync(file)));
  return file;
}

/** The offset just after the one occurrence of GGUF string `s` (u64 length + UTF-8 bytes) in `bytes`. */
export function afterString(bytes: Buffer, s: string): number {
  const text = Buffer.from(s, 'utf8');
  const needle = Buffer.alloc(8 + text.length);
  needle.writeBigUInt64LE(BigInt(text.length));
  text.copy(needle, 8);
  const at = bytes.indexOf(needle);
  if (at < 0 || bytes.indexOf(needle, at + 1) >= 0) throw new Error(`string ${s} is not in the file exactly once`);
  return at + needle.length;
}

/** Offsets of a tensor info's fields: its u32 n_dims, its dims, its u32 type and its u64 offset. */
export function tensorInfoAt(bytes: Buffer, name: string): { nDims: number; dims: number; type: number; offset: number } {
  const nDims = afterString(bytes, name);
  const type = nDims + 4 + 8 * bytes.readUInt32LE(nDims);
  return { nDims, dims: nDims + 4, type, offset: type + 4 };
}
