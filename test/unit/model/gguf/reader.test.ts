import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { GgufValue } from '../../../../src/model/gguf/metadata';
import { readGguf, tensorBytes } from '../../../../src/model/gguf/reader';
import { byteSize, ggmlTypeId } from '../../../../src/model/gguf/types';
import { type ExpectedEntry, expected, FIXTURES, patchedCopy, withTempDir } from './fixtures';

/** expected.json's spelling of a value as the reader returns it: 64-bit integers are decimal strings there. */
function jsValue(type: string, itemType: string | undefined, value: unknown): GgufValue {
  if (type === 'ARRAY') return (value as unknown[]).map((v) => jsValue(itemType === 'ARRAY' ? 'INT32' : itemType!, undefined, v));
  if (type === 'UINT64' || type === 'INT64') {
    const big = BigInt(value as string);
    return Number.isSafeInteger(Number(big)) ? Number(big) : big;
  }
  return value as GgufValue;
}

test('metadata of every value type reads back as gguf-py wrote it, in file order', () => {
  for (const [name, want] of Object.entries(expected.files)) {
    const g = readGguf(join(FIXTURES, name));
    assert.deepEqual([...g.metadata.keys()], want.keys, name);
    for (const [key, entry] of Object.entries(expected.metadata)) {
      const e: ExpectedEntry = entry;
      const got = g.metadata.get(key)!;
      assert.equal(got.type, e.type, `${name} ${key}`);
      assert.equal(got.itemType, e.itemType, `${name} ${key}`);
      assert.deepEqual(got.value, jsValue(e.type, e.itemType, e.value), `${name} ${key}`);
    }
  }
});

test('64-bit integers are numbers when a double holds them exactly, else bigints', () => {
  const g = readGguf(join(FIXTURES, 'q4_1.gguf'));
  assert.equal(g.metadata.get('test.uint64_small')!.value, 12345);
  assert.equal(g.metadata.get('test.uint64')!.value, 2n ** 64n - 1n);
  assert.equal(g.metadata.get('test.int64')!.value, -(2n ** 63n));
  assert.deepEqual(g.metadata.get('test.array_uint64')!.value, [1, 2n ** 64n - 1n]);
});

test('tensor infos: dims innermost first, shape reversed, type, and data placed at aligned offsets', () => {
  for (const [name, want] of Object.entries(expected.files)) {
    const g = readGguf(join(FIXTURES, name));
    assert.equal(g.version, 3);
    assert.equal(g.alignment, want.alignment, name);
    assert.equal(g.dataStart % g.alignment, 0);
    assert.deepEqual(
      [...g.tensors.keys()],
      want.tensors.map((t) => t.name),
    );
    let end = g.dataStart;
    for (const w of want.tensors) {
      const t = g.tensors.get(w.name)!;
      assert.deepEqual(t.dims, w.dims, `${name} ${w.name}`);
      assert.deepEqual(t.shape, [...w.dims].reverse());
      assert.equal(t.typeName, w.type);
      assert.equal(t.type, ggmlTypeId(w.type));
      assert.equal(
        t.elements,
        w.dims.reduce((a, b) => a * b, 1),
      );
      assert.equal(t.byteLength, byteSize(t.type, t.elements));
      assert.equal(t.start, g.dataStart + t.offset);
      assert.equal(t.offset % g.alignment, 0);
      assert.equal(t.start, Math.ceil(end / g.alignment) * g.alignment, 'gguf-py packs tensors in order, each aligned');
      end = t.start + t.byteLength;
    }
    assert.equal(Math.ceil(end / g.alignment) * g.alignment, statSync(join(FIXTURES, name)).size, 'the last tensor ends the file');
  }
});

test('the 1-D and 3-D tensors keep their dims', () => {
  const g = readGguf(join(FIXTURES, 'q5_0.gguf'));
  assert.deepEqual(g.tensors.get('output_norm.weight')!.shape, [256]);
  assert.deepEqual(g.tensors.get('blk.0.attn_k.weight')!.dims, [64, 3, 2]);
  assert.deepEqual(g.tensors.get('blk.0.attn_k.weight')!.shape, [2, 3, 64]);
});

test('version 2 has the same layout and reads the same', () => {
  withTempDir((dir) => {
    const v2 = patchedCopy('q6_k.gguf', dir, (b) => {
      b.writeUInt32LE(2, 4);
      return b;
    });
    const g2 = readGguf(v2);
    const g3 = readGguf(join(FIXTURES, 'q6_k.gguf'));
    assert.equal(g2.version, 2);
    assert.deepEqual([...g2.tensors.values()], [...g3.tensors.values()]);
    assert.deepEqual(g2.metadata, g3.metadata);
    assert.deepEqual(tensorBytes(g2, 'blk.0.ffn_up.weight'), tensorBytes(g3, 'blk.0.ffn_up.weight'));
  });
});

test('tensorBytes reads exactly one tensor\u2019s bytes', () => {
  const g = readGguf(join(FIXTURES, 'q4_k.gguf'));
  const t = g.tensors.get('blk.0.attn_q.weight')!;
  const bytes = tensorBytes(g, t);
  assert.equal(bytes.length, 2 * 144);
  assert.equal(bytes.byteOffset, 0, 'a buffer of its own');
});
