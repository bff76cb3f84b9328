/**
 * Which backend a worker role uses when nothing is asked for: the GPU build with a driver, else a native
 * build on CPU for the roles where it beats wasm, else wasm; STARPO_BACKEND wins over all of it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultBackend, requestedBackend, type HostBackends } from '../../src/model/backend_choice';

const host = (tensorflow: boolean, tensorflowGpu: boolean, nvidiaDriver: boolean): HostBackends => ({ tensorflow, tensorflowGpu, nvidiaDriver });

test('a host with nothing installed computes on wasm in both roles, with or without a driver', () => {
  for (const role of ['rollout', 'update'] as const) {
    assert.equal(defaultBackend(role, host(false, false, false)), 'wasm');
    assert.equal(defaultBackend(role, host(false, false, true)), 'wasm');
  }
});

test('the CPU build is used when installed; the GPU build wins when a driver is loaded', () => {
  for (const role of ['rollout', 'update'] as const) {
    assert.equal(defaultBackend(role, host(true, false, false)), 'tensorflow');
    assert.equal(defaultBackend(role, host(true, true, false)), 'tensorflow', 'no driver: the CPU build');
    assert.equal(defaultBackend(role, host(false, true, false)), 'tensorflow-gpu', 'only the GPU build: it computes on CPU');
    assert.equal(defaultBackend(role, host(true, true, true)), 'tensorflow-gpu');
    assert.equal(defaultBackend(role, host(false, true, true)), 'tensorflow-gpu');
  }
});

test('STARPO_BACKEND wins over the role default a worker passes as its preference', () => {
  assert.equal(requestedBackend({ STARPO_BACKEND: 'wasm' }, defaultBackend('update', host(true, false, false))), 'wasm');
  assert.equal(requestedBackend({}, defaultBackend('update', host(true, false, false))), 'tensorflow');
});
