/** The ConfigError a config-loading call throws, for tests that read its problems. */
import assert from 'node:assert/strict';
import { ConfigError } from '../../src/contract';

/** Runs `fn` and returns the ConfigError it throws; fails the test when it returns or throws anything else. */
export function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err;
  }
  assert.fail('expected a ConfigError');
}
