/**
 * The backend a model or algorithm test file computes on. It is wasm, the default, unless STARPO_BACKEND names
 * another: test/unit/native_suite.test.ts runs every test file that imports this helper a second time, in a
 * child process with STARPO_BACKEND=tensorflow, so each of those files passes on wasm and on native TensorFlow.
 */
import assert from 'node:assert/strict';
import { initBackend } from '../../src/model/backend';
import { requestedBackend } from '../../src/model/backend_choice';

const requested = requestedBackend(process.env) ?? 'wasm';
/** The canonical backend name of this test process (e.g. 'tensorflow-gpu'), for the STARPO_BACKEND of children it starts. */
export const TEST_BACKEND_NAME: string = requested;
/** The tfjs backend name this process is meant to compute on ('wasm', or 'tensorflow' for both native ones). */
export const TEST_BACKEND: string = requested === 'tensorflow-gpu' ? 'tensorflow' : requested;

/** Initializes TEST_BACKEND and checks that it is the one active. @returns its name */
export async function initTestBackend(): Promise<string> {
  const active = await initBackend('wasm'); // STARPO_BACKEND, when set, wins over the argument
  assert.equal(active, TEST_BACKEND, 'the backend this test process computes on');
  return active;
}
