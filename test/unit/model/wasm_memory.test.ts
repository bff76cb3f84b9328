import assert from 'node:assert/strict';
import { test } from 'node:test';
import { qwen25HalfBShape } from '../../../src/algo/throughput';
import { ConfigError } from '../../../src/contract/errors';
import { initBackend } from '../../../src/model/backend';
import { tinyPreset } from '../../../src/model/config';
import { assertFitsBackend, WASM_HEAP_BYTES, wasmBytesAtLeast } from '../../../src/model/wasm_memory';
import { nativeOrSkip } from '../../helpers/native_or_skip';

const GIB = 1024 ** 3;

test('wasm memory: Qwen2.5-0.5B cannot update on wasm (weights + gradients + AdamW moments + transposes > 4 GiB) and is refused up front', async (t) => {
  if ((await initBackend('wasm')) !== 'wasm') {
    t.skip('STARPO_BACKEND names another backend for this process');
    return;
  }
  const full = qwen25HalfBShape();
  // 494M float32 weights (1.84 GiB) four times (weights, gradients, m, v), plus the kept transposes and the tied
  // lm_head's per-call transpose.
  assert.ok(wasmBytesAtLeast(full, 'update') > WASM_HEAP_BYTES);
  assert.ok(wasmBytesAtLeast(full, 'update') / GIB > 7.8);
  assert.throws(
    () => assertFitsBackend(full, 'update', 'checkpoints/step_0'),
    (e: unknown) =>
      e instanceof ConfigError &&
      /backend wasm: an update of this model \(24 layers, hidden 896, vocabulary 151936\) needs at least 8\.\d\d GiB/.test(e.message) &&
      /starpo backend install/.test(e.message),
  );
  // Its rollouts, the 2-layer slice and the quickstart's model fit.
  assertFitsBackend(full, 'rollout', 'checkpoints/step_0');
  assertFitsBackend(qwen25HalfBShape(2), 'update', 'checkpoints/step_0');
  assertFitsBackend(tinyPreset(101), 'update', 'checkpoints/step_0');
});

test('wasm memory: the native backend is never refused by the wasm ceiling', async (t) => {
  if (!(await nativeOrSkip(t))) return;
  assertFitsBackend(qwen25HalfBShape(), 'update', 'checkpoints/step_0');
});
