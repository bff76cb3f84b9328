import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { decodeSafetensors, encodeLazySafetensors, encodeSafetensors, toFloat32 } from '../../../../src/model/hf/safetensors';

test('round trip F32, I32, F16, BF16 with metadata: wider types first, then by name, contiguous, header padded to 8', () => {
  const bytes = encodeSafetensors(
    {
      'b.w': { dtype: 'F32', shape: [2, 2], data: new Float32Array([1, 2, 3, 4]) },
      'a.i': { dtype: 'I32', shape: [3], data: new Int32Array([-1, 0, 7]) },
      'c.h': { dtype: 'F16', shape: [3], data: new Uint16Array([0x3c00, 0xc000, 0x3555]) },
      'd.bf': { dtype: 'BF16', shape: [2], data: new Uint16Array([0x3f80, 0xc040]) },
    },
    { format: 'pt' },
  );
  const hlen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assert.equal(hlen % 8, 0);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + hlen)));
  assert.deepEqual(Object.keys(header), ['__metadata__', 'b.w', 'a.i', 'd.bf', 'c.h']);
  let end = 0;
  for (const k of ['b.w', 'a.i', 'd.bf', 'c.h']) {
    assert.equal(header[k].data_offsets[0], end, `${k} starts where the previous tensor ends`);
    end = header[k].data_offsets[1];
  }
  assert.equal(bytes.length, 8 + hlen + end, 'no bytes after the last tensor');
  const { tensors, metadata } = decodeSafetensors(bytes);
  assert.deepEqual(metadata, { format: 'pt' });
  assert.deepEqual(Array.from(tensors['b.w'].data), [1, 2, 3, 4]);
  assert.deepEqual(tensors['b.w'].shape, [2, 2]);
  assert.deepEqual(Array.from(tensors['a.i'].data), [-1, 0, 7]);
  const h = toFloat32(tensors['c.h']);
  assert.equal(h[0], 1);
  assert.equal(h[1], -2);
  assert.ok(Math.abs(h[2] - 1 / 3) < 1e-3);
  assert.deepEqual(Array.from(toFloat32(tensors['d.bf'])), [1, -3]);
});

test('decodes a hand-built file', () => {
  const header = '{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}';
  const hb = new TextEncoder().encode(header);
  const buf = new Uint8Array(8 + hb.length + 8);
  new DataView(buf.buffer).setBigUint64(0, BigInt(hb.length), true);
  buf.set(hb, 8);
  new DataView(buf.buffer).setFloat32(8 + hb.length, 1.5, true);
  new DataView(buf.buffer).setFloat32(8 + hb.length + 4, -2.25, true);
  const { tensors, metadata } = decodeSafetensors(buf);
  assert.deepEqual(metadata, {});
  assert.deepEqual(Array.from(tensors.x.data), [1.5, -2.25]);
});

test('errors name the problem', () => {
  assert.throws(() => decodeSafetensors(new Uint8Array(4)), /shorter than/);
  assert.throws(
    () => encodeSafetensors({ w: { dtype: 'F32', shape: [3], data: new Float32Array(2) } }),
    /w has 2 elements, shape \[3\] needs 3/,
  );
});

test("Python's safetensors file (odd-sized BF16 and F16 tensors) reads back and is written again byte for byte", () => {
  // test/fixtures/hf/safetensors_fixtures.py wrote it with safetensors.torch.save_file.
  const python = new Uint8Array(readFileSync('test/fixtures/hf/odd.safetensors'));
  const { tensors, metadata } = decodeSafetensors(python);
  assert.deepEqual(metadata, { format: 'pt' });
  assert.deepEqual(Array.from(toFloat32(tensors['odd.bf16'])), [1, -2, 0.5]);
  assert.deepEqual(tensors['odd.bf16'].shape, [3]);
  assert.deepEqual(Array.from(toFloat32(tensors['one.f16'])), [-1.5]);
  assert.deepEqual(Array.from(tensors['w.f32'].data), [1.5, -2.25, 3, 0.125]);
  assert.deepEqual(tensors['w.f32'].shape, [2, 2]);
  assert.deepEqual(Array.from(tensors['ids.i32'].data), [3, -4, 5]);
  assert.deepEqual(Array.from(toFloat32(tensors['b.bf16'])), [0.25, 4]);
  assert.deepEqual(encodeSafetensors(tensors, metadata), python);
});

test('an integer-like tensor name keeps its data order in the header', () => {
  const bytes = encodeSafetensors({
    a: { dtype: 'F32', shape: [1], data: new Float32Array([1]) },
    7: { dtype: 'BF16', shape: [1], data: new Uint16Array([0x4000]) },
  });
  const hlen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assert.match(
    new TextDecoder().decode(bytes.subarray(8, 8 + hlen)),
    /^\{"a":\{[^}]*"data_offsets":\[0,4\]\},"7":\{[^}]*"data_offsets":\[4,6\]\}\}/,
  );
  assert.deepEqual(Array.from(toFloat32(decodeSafetensors(bytes).tensors['7'])), [2]);
});

test('lazy tensors: the same bytes, each read once as its data is written, a read of the wrong size refused', () => {
  const data = {
    'v.b': new Float32Array([5, 6, 7]),
    'm.a': new Float32Array([1, 2]),
    i: new Int32Array([9]),
  };
  const shapes: Record<string, number[]> = { 'v.b': [3], 'm.a': [2, 1], i: [1] };
  const reads: string[] = [];
  const lazy = Object.fromEntries(
    Object.entries(data).map(([name, d]) => [
      name,
      {
        dtype: d instanceof Float32Array ? ('F32' as const) : ('I32' as const),
        shape: shapes[name],
        read: () => {
          reads.push(name);
          return d;
        },
      },
    ]),
  );
  const eager = Object.fromEntries(
    Object.entries(lazy).map(([name, t]) => [name, { dtype: t.dtype, shape: t.shape, data: data[name as keyof typeof data] }]),
  );
  assert.deepEqual(encodeLazySafetensors(lazy, { step: '3' }), encodeSafetensors(eager, { step: '3' }));
  assert.deepEqual(reads, ['m.a', 'v.b', 'i'], 'in the order of the data section');
  assert.throws(
    () => encodeLazySafetensors({ 'm.a': { dtype: 'F32', shape: [4], read: () => data['m.a'] } }),
    /tensor m\.a has 2 elements, shape \[4\] needs 4/,
  );
});
