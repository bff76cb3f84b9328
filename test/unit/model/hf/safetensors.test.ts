import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  decodeSafetensors,
  encodeSafetensors,
  SafetensorsDecoder,
  safetensorsStream,
  safetensorsStreamOf,
  toFloat32,
} from '../../../../src/model/hf/safetensors';

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

const sample = () => ({
  'b.w': { dtype: 'F32' as const, shape: [2, 3], data: new Float32Array([1, 2, 3, 4, 5, 6]) },
  'a.i': { dtype: 'I32' as const, shape: [3], data: new Int32Array([-1, 0, 7]) },
  empty: { dtype: 'F32' as const, shape: [0, 4], data: new Float32Array(0) },
  'c.h': { dtype: 'F16' as const, shape: [3], data: new Uint16Array([0x3c00, 0xc000, 0x3555]) },
});

async function collect(stream: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const part of stream) parts.push(new Uint8Array(part)); // a copy: the writer may reuse nothing, but be sure
  return new Uint8Array(Buffer.concat(parts));
}

test('the streamed file is encodeSafetensors byte for byte, whatever pieces the tensors come in', async () => {
  const tensors = sample();
  const whole = encodeSafetensors(tensors, { format: 'pt' });
  const streamed = safetensorsStreamOf(tensors, { format: 'pt' });
  assert.equal(streamed.bytes, whole.length);
  assert.deepEqual(await collect(streamed.chunks()), whole);
  // The data of b.w in three row pieces, as a model's big weights are read from the device.
  const pieces = safetensorsStream(tensors, { format: 'pt' }, (name) =>
    name === 'b.w' ? [new Float32Array([1, 2, 3]), new Float32Array([4, 5]), new Float32Array([6])] : [tensors[name as 'a.i'].data],
  );
  assert.deepEqual(await collect(pieces.chunks()), whole);
  const short = safetensorsStream(tensors, undefined, (name) => (name === 'b.w' ? [new Float32Array(5)] : [tensors[name as 'a.i'].data]));
  await assert.rejects(collect(short.chunks()), /tensor b\.w gave 20 data bytes, shape \[2,3\] needs 24/);
});

test('the decoder fed pieces of every size gives what decodeSafetensors gives', () => {
  const whole = encodeSafetensors(sample(), { format: 'pt' });
  const expected = decodeSafetensors(whole);
  for (const size of [1, 3, 7, 8, 9, 64, whole.length]) {
    const decoder = new SafetensorsDecoder(whole.length);
    for (let at = 0; at < whole.length; at += size) decoder.write(whole.subarray(at, at + size));
    assert.deepEqual(decoder.finish(), expected, `pieces of ${size} bytes`);
  }
});

test('the decoder with onTensor hands each tensor over once, complete, once its last byte is in, and keeps none', () => {
  const whole = encodeSafetensors(sample(), { format: 'pt' });
  const headerLength = Number(new DataView(whole.buffer).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(whole.subarray(8, 8 + headerLength)));
  // an empty tensor is complete with the header; the others once the byte before their end is in
  const fileEnd = (name: string) => {
    const [begin, end] = header[name].data_offsets;
    return end === begin ? 8 + headerLength : 8 + headerLength + end;
  };
  const expected = decodeSafetensors(whole).tensors;
  for (const size of [1, 5, 64, whole.length]) {
    const got: Record<string, unknown> = {};
    let fed = 0;
    const decoder = new SafetensorsDecoder(whole.length, (name, t) => {
      assert.equal(got[name], undefined, `${name} handed over once`);
      assert.ok(fed >= fileEnd(name), `${name} handed over after its last byte (pieces of ${size} bytes)`);
      got[name] = t;
    });
    for (let at = 0; at < whole.length; at += size) {
      fed = Math.min(at + size, whole.length);
      decoder.write(whole.subarray(at, fed));
    }
    assert.deepEqual(got, expected, `pieces of ${size} bytes`);
    assert.deepEqual(decoder.finish(), { tensors: {}, metadata: { format: 'pt' } });
  }
});

test('the decoder refuses a truncated file, overlapping tensors and a header that claims more than the file', () => {
  const whole = encodeSafetensors(sample());
  const cut = new SafetensorsDecoder();
  cut.write(whole.subarray(0, whole.length - 2));
  assert.throws(() => cut.finish(), /tensor c\.h data_offsets end at \d+, the file has \d+ data bytes/);
  const headerOnly = new SafetensorsDecoder();
  headerOnly.write(whole.subarray(0, 12));
  assert.throws(() => headerOnly.finish(), /header length \d+ exceeds the file size 12/);

  const file = (header: string, dataBytes: number) => {
    const hb = new TextEncoder().encode(header);
    const buf = new Uint8Array(8 + hb.length + dataBytes);
    new DataView(buf.buffer).setBigUint64(0, BigInt(hb.length), true);
    buf.set(hb, 8);
    return buf;
  };
  const overlapping = file(
    '{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
    8,
  );
  assert.throws(() => decodeSafetensors(overlapping), /tensors x and y overlap/);
  // 4 GB claimed by a 16-byte file: refused before anything is allocated.
  const huge = file('{"x":{"dtype":"F32","shape":[1073741824],"data_offsets":[0,4294967296]}}', 0);
  assert.throws(() => new SafetensorsDecoder(huge.length).write(huge), /tensor x data_offsets \[0, 4294967296\] do not fit/);
});
