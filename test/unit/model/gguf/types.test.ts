import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GgufError } from '../../../../src/model/gguf/error';
import { byteSize, ggmlType, ggmlTypeId, ggmlTypeName } from '../../../../src/model/gguf/types';
import { expected } from './fixtures';

test(`the ggml type table equals gguf-py ${expected.gguf_version}\u2019s GGMLQuantizationType and GGML_QUANT_SIZES`, () => {
  for (const [name, [id, blockSize, typeSize]] of Object.entries(expected.ggml_types)) {
    assert.deepEqual(ggmlType(id), { id, name, blockSize, typeSize }, name);
    assert.equal(ggmlTypeId(name), id);
  }
  for (let id = 0; id < 64; id++) {
    if (!Object.values(expected.ggml_types).some(([i]) => i === id)) assert.equal(ggmlType(id), undefined, `id ${id}`);
  }
});

test('byteSize is whole blocks times bytes per block', () => {
  assert.equal(byteSize(ggmlTypeId('F32'), 7), 28);
  assert.equal(byteSize(ggmlTypeId('BF16'), 3), 6);
  assert.equal(byteSize(ggmlTypeId('Q4_1'), 4096), 128 * 20);
  assert.equal(byteSize(ggmlTypeId('Q6_K'), 576 * 256), 576 * 210);
  assert.equal(byteSize(ggmlTypeId('Q8_0'), 0), 0);
  assert.throws(() => byteSize(ggmlTypeId('Q4_K'), 100), /100 elements of Q4_K are not a whole number of 256-element blocks/);
  assert.throws(() => byteSize(4, 32), /ggml type id 4 does not exist/);
});

test('an id ggml does not define is named unknown; an unknown name lists the real ones', () => {
  assert.equal(ggmlTypeName(12), 'Q4_K');
  assert.equal(ggmlTypeName(4), 'unknown');
  assert.equal(ggmlTypeName(99), 'unknown');
  assert.throws(
    () => ggmlTypeId('Q4_2'),
    (e: unknown) => e instanceof GgufError && /allowed: F32, F16, Q4_0/.test(e.message),
  );
});
