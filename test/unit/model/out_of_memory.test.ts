/**
 * A backend running out of memory, on the real backends: a wasm tensor larger than the heap can grow to fails
 * with the bytes it needed (and leaves the backend usable: the guard throws before tfjs writes at address 0), a
 * TensorFlow allocation failure is told apart the same way, and other errors are not.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { OUT_OF_MEMORY_ERROR } from '../../../src/contract';
import { initBackend } from '../../../src/model/backend';
import { atShape, BackendOutOfMemoryError, outOfMemoryOf } from '../../../src/model/out_of_memory';
import { WASM_HEAP_BYTES } from '../../../src/model/wasm_memory';
import { nativeOrSkip } from '../../helpers/native_or_skip';

const shape = { kind: 'micro-batch', rows: 128, tokens: 768 } as const;

/** The [n, m] outer product of two ones vectors: a wasm kernel's output of n x m floats, allocated without a JS array. */
const outer = (n: number, m: number) => tf.tidy(() => tf.matMul(tf.ones([n, 1]), tf.ones([1, m])));

/** What `f` throws. */
function thrownBy(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  return assert.fail('nothing thrown');
}

test('wasm: a tensor the heap cannot hold fails with the bytes needed and the shape, and the backend still computes', async (t) => {
  if ((await initBackend('wasm')) !== 'wasm') {
    t.skip('STARPO_BACKEND names another backend for this process');
    return;
  }
  // 1 MiB held, plus 64 KiB less than the heap's ceiling: malloc cannot grow the heap enough and returns 0.
  const kept = tf.ones([262144]);
  const failed = thrownBy(() => atShape(shape, () => outer(32768, 32767)));
  assert.ok(failed instanceof BackendOutOfMemoryError, String(failed));
  assert.equal(failed.name, OUT_OF_MEMORY_ERROR);
  assert.deepEqual(
    { ...failed.details, heldBytes: failed.details.heldBytes >= 2 ** 20 },
    { backend: 'wasm', requestBytes: 32768 * 32767 * 4, heldBytes: true, capacityBytes: WASM_HEAP_BYTES, reason: 'malloc failed', shape },
  );
  assert.match(
    failed.message,
    /^out of wasm memory in a micro-batch of 128 x 768 tokens \(rows x tokens\): it needed at least 4\.00 GiB \(0\.00 GiB held by tensors \+ an allocation of 4\.00 GiB\); the wasm backend holds at most 4\.00 GiB$/,
  );
  // 4 GiB exactly: as malloc's 32-bit size it would be 0 bytes; refused before malloc.
  const wrapped = thrownBy(() => outer(32768, 32768));
  assert.ok(wrapped instanceof BackendOutOfMemoryError, String(wrapped));
  assert.deepEqual([wrapped.details.requestBytes, wrapped.details.reason, wrapped.details.shape], [2 ** 32, 'larger than the heap', null]);
  assert.equal(tf.memory().numBytes, 2 ** 20, 'nothing of the failed computations is held');
  assert.equal(failed.details.heldBytes, 2 ** 20 + (32768 + 32767) * 4, 'held: kept and the operands of the product');
  assert.deepEqual(Array.from(tf.tidy(() => tf.add(kept, 1).dataSync().slice(0, 3))), [2, 2, 2], 'the heap is intact');
  kept.dispose();
});

test('wasm: an emscripten abort is out of memory; other errors pass through atShape unchanged', async (t) => {
  if ((await initBackend('wasm')) !== 'wasm') {
    t.skip('STARPO_BACKEND names another backend for this process');
    return;
  }
  const aborted = outOfMemoryOf(new Error('Aborted(). Build with -sASSERTIONS for more info.'));
  assert.ok(aborted, 'an emscripten abort');
  assert.equal(aborted.details.requestBytes, null);
  assert.match(
    aborted.message,
    /^out of wasm memory: the backend failed \(Aborted\(\)\. Build with -sASSERTIONS for more info\., heap grown to \d+\.\d\d GiB\)/,
  );
  // A RuntimeError far below the ceiling is a bug, not memory (this process's heap is small).
  const runtime = new Error('table index is out of bounds');
  runtime.name = 'RuntimeError';
  assert.equal(outOfMemoryOf(runtime), null);
  assert.equal(outOfMemoryOf(new RangeError('generate: contexts[0] is empty')), null);
  const plain = new Error('not memory');
  assert.throws(() => atShape(shape, () => tf.tidy(() => tf.add(tf.ones([2]), tf.ones([3])))), /Operands could not be broadcast/);
  assert.throws(
    () =>
      atShape(shape, () => {
        throw plain;
      }),
    (e: unknown) => e === plain,
  );
  assert.equal(
    atShape(shape, () => 7),
    7,
  );
});

test('native: a TensorFlow allocation failure is out of memory, with the bytes of the tensor it could not allocate', async (t) => {
  if (!(await nativeOrSkip(t))) return;
  // A [100000, 100000] float product: 37 GiB, more than TensorFlow's allocator may take on any test host.
  const x = tf.ones([100000, 2]);
  let thrown: unknown;
  try {
    atShape({ kind: 'generation batch', rows: 64, tokens: 400 }, () => tf.matMul(x, x, false, true));
  } catch (err) {
    thrown = err;
  }
  x.dispose();
  assert.ok(thrown instanceof BackendOutOfMemoryError, String(thrown));
  assert.equal(thrown.details.backend, 'tensorflow');
  assert.equal(thrown.details.requestBytes, 100000 * 100000 * 4);
  assert.match(thrown.details.reason, /^OOM when allocating tensor with shape\[100000,100000\] and type float/);
  assert.match(
    thrown.message,
    /^out of tensorflow memory in a generation batch of 64 x 400 tokens \(rows x tokens\): it needed at least \d+\.\d\d GiB \(\d+\.\d\d GiB resident in the process \+ an allocation of 37\.25 GiB\); this host has \d+\.\d\d GiB$/,
  );
  assert.equal(tf.add(tf.ones([2]), 1).dataSync()[0], 2, 'TensorFlow still computes');
});
