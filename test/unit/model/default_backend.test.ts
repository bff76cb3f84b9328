/**
 * Which backend a worker role uses when nothing is asked for: the GPU build with a driver, else wasm for the
 * rollouts of a small model, else a native build on CPU, else wasm; STARPO_BACKEND wins over all of it.
 * `starpo train` passes each role's choice for the run's model to the workers it starts.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { roleBackends } from '../../../src/cli/train';
import { defaultBackend, type HostBackends, requestedBackend, WASM_ROLLOUT_MAX_PARAMS } from '../../../src/model/backend_choice';
import { countParams, tinyPreset } from '../../../src/model/config';
import { charTokenizer } from '../../../src/model/tokenizer';
import { fixtureConfig } from '../../helpers/fixture';

const host = (tensorflow: boolean, tensorflowGpu: boolean, nvidiaDriver: boolean): HostBackends => ({
  tensorflow,
  tensorflowGpu,
  nvidiaDriver,
});

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

test('a small model rolls out on wasm on a CPU host (native updates it); a larger one, or an unknown one, on native', () => {
  const cpu = host(true, false, false);
  assert.equal(defaultBackend('rollout', cpu, WASM_ROLLOUT_MAX_PARAMS), 'wasm');
  assert.equal(defaultBackend('update', cpu, WASM_ROLLOUT_MAX_PARAMS), 'tensorflow');
  assert.equal(defaultBackend('rollout', cpu, WASM_ROLLOUT_MAX_PARAMS + 1), 'tensorflow');
  assert.equal(defaultBackend('rollout', cpu), 'tensorflow', 'a standalone worker does not know the model');
  assert.equal(defaultBackend('rollout', host(true, true, true), 1000), 'tensorflow-gpu', 'a GPU takes every model');
  assert.equal(defaultBackend('rollout', host(false, false, false), WASM_ROLLOUT_MAX_PARAMS + 1), 'wasm', 'nothing installed');
});

test("starpo train starts the quickstart's rollout workers on wasm and its update worker on native, unless STARPO_BACKEND says", () => {
  const config = fixtureConfig();
  assert.equal(config.pretrain, 'tiny');
  assert.ok(countParams(tinyPreset(charTokenizer().vocabSize)) <= WASM_ROLLOUT_MAX_PARAMS, 'the tiny preset is a small model');
  assert.deepEqual(roleBackends(config, host(true, false, false), {}), { rollout: 'wasm', update: 'tensorflow' });
  assert.deepEqual(roleBackends(config, host(false, false, false), {}), { rollout: 'wasm', update: 'wasm' });
  assert.deepEqual(
    roleBackends(config, host(true, false, false), { STARPO_BACKEND: 'tensorflow' }),
    {},
    'the workers inherit STARPO_BACKEND',
  );
  assert.deepEqual(roleBackends(null, host(true, false, false), {}), {}, 'config unknown: the workers pick');
});

test('STARPO_BACKEND wins over the role default a worker passes as its preference', () => {
  assert.equal(requestedBackend({ STARPO_BACKEND: 'wasm' }, defaultBackend('update', host(true, false, false))), 'wasm');
  assert.equal(requestedBackend({}, defaultBackend('update', host(true, false, false))), 'tensorflow');
});
