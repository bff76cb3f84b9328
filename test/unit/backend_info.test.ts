import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backendInfo, initBackend } from '../../src/model/backend';

test('backendInfo: refuses before initBackend, then names the active backend; wasm and cpu compute on the CPU', async () => {
  delete process.env.STARPO_BACKEND; // this file checks the backends it asks for itself
  assert.throws(() => backendInfo(), /await initBackend\(\) first/);
  assert.equal(await initBackend('cpu'), 'cpu');
  assert.deepEqual(backendInfo(), { backend: 'cpu', device: 'CPU' });
  assert.equal(await initBackend('wasm'), 'wasm');
  assert.deepEqual(backendInfo(), { backend: 'wasm', device: 'CPU' });
});
