/**
 * For a test that needs native TensorFlow in this process: initializes it, or skips the test saying why (the build
 * is not installed, or STARPO_BACKEND names another backend). Not in helpers/backend.ts, whose importers
 * native_suite.test.ts runs a second time on native.
 */
import type { TestContext } from 'node:test';
import { initBackend } from '../../src/model/backend';

/** @returns true when native TensorFlow is active; false after skipping `t`. */
export async function nativeOrSkip(t: TestContext): Promise<boolean> {
  let active = '';
  try {
    active = await initBackend('tensorflow');
  } catch (e) {
    t.skip(`native build not installed: ${(e as Error).message.split('\n')[0]}`);
    return false;
  }
  if (active !== 'tensorflow') {
    t.skip('STARPO_BACKEND names another backend for this process');
    return false;
  }
  return true;
}
