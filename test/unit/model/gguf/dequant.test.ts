import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEQUANTIZABLE, dequantize } from '../../../../src/model/gguf/dequant';
import { halfTable } from '../../../../src/model/gguf/half';
import { readGguf, tensorFloat32 } from '../../../../src/model/gguf/reader';
import { ggmlTypeId } from '../../../../src/model/gguf/types';
import { expected, FIXTURES } from './fixtures';

function bitsHex(x: Float32Array, i: number): string {
  return new Uint32Array(x.buffer, x.byteOffset, x.length)[i].toString(16).padStart(8, '0');
}

function sha256(x: Float32Array): string {
  return createHash('sha256')
    .update(new Uint8Array(x.buffer, x.byteOffset, x.byteLength))
    .digest('hex');
}

test(`every type decodes bit for bit as gguf.quants.dequantize (gguf-py ${expected.gguf_version})`, () => {
  const types = new Set<string>();
  for (const [name, want] of Object.entries(expected.files)) {
    const g = readGguf(join(FIXTURES, name));
    for (const w of want.tensors) {
      const values = tensorFloat32(g, w.name);
      types.add(w.type);
      for (const [i, bits] of w.samples) assert.equal(bitsHex(values, i), bits, `${name} ${w.name}[${i}]`);
      assert.equal(sha256(values), w.sha256, `${name} ${w.name}: all ${values.length} elements`);
    }
  }
  assert.deepEqual([...types].sort(), DEQUANTIZABLE.split(', ').sort(), 'a fixture for every type dequantize decodes');
});

test('F16 to float32: subnormals, signed zero, infinities and NaN payloads as ggml and numpy widen them', () => {
  const h = halfTable();
  const bits = new Uint32Array(h.buffer);
  assert.equal(h[0x0001], 2 ** -24, 'smallest subnormal');
  assert.equal(h[0x03ff], 1023 * 2 ** -24, 'largest subnormal');
  assert.equal(h[0x0400], 2 ** -14, 'smallest normal');
  assert.equal(h[0x7bff], 65504);
  assert.equal(h[0x3c00], 1);
  assert.ok(Object.is(h[0x8000], -0));
  assert.equal(h[0xfc00], -Infinity);
  assert.equal(bits[0x7e01].toString(16), '7fc02000');
  const snan = dequantize(ggmlTypeId('F16'), new Uint8Array([0x55, 0xfd]), 1);
  assert.equal(bitsHex(snan, 0), 'ffaaa000', 'a signalling NaN keeps its payload, as numpy widens it');
});

test('Q4_0 element order: the low nibbles are elements 0..15, the high nibbles 16..31', () => {
  const block = new Uint8Array(18);
  block.set([0x00, 0x3c]); // d = 1.0
  for (let j = 0; j < 16; j++) block[2 + j] = (j & 0x0f) | ((15 - j) << 4);
  const y = dequantize(ggmlTypeId('Q4_0'), block, 32);
  assert.deepEqual(
    Array.from(y),
    Array.from({ length: 32 }, (_, i) => (i < 16 ? i - 8 : 15 - (i - 16) - 8)),
  );
});

test('Q5_0: bit j of the little-endian qh word is the fifth bit of element j', () => {
  const block = new Uint8Array(22);
  block.set([0x00, 0x3c]); // d = 1.0
  block.set([0x01, 0x00, 0x00, 0x80], 2); // qh bits 0 and 31: elements 0 and 31
  const y = dequantize(ggmlTypeId('Q5_0'), block, 32);
  assert.deepEqual(
    Array.from(y),
    Array.from({ length: 32 }, (_, i) => (i === 0 || i === 31 ? 0 : -16)),
  );
});

test('dequantize refuses a byte length that is not the elements\u2019 size', () => {
  assert.throws(() => dequantize(ggmlTypeId('Q8_0'), new Uint8Array(33), 32), /32 elements of Q8_0 take 34 bytes, got 33/);
  assert.throws(() => dequantize(ggmlTypeId('Q2_K'), new Uint8Array(84), 256), /type Q2_K \(10\) cannot be dequantised; allowed: F32, F16/);
});
