/**
 * The liveness keys of the run config: heartbeat_timeout_seconds has a least value, and must stay below
 * watchdog_seconds (the longest a computation may run between two heartbeats) unless the watchdog is off.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HEARTBEAT_TIMEOUT_DEFAULT_SECONDS, HEARTBEAT_TIMEOUT_MIN_SECONDS } from '../../../src/contract';
import { configErrorOf } from '../../helpers/config_error';
import { fixtureConfig } from '../../helpers/fixture';

test('heartbeat_timeout_seconds defaults below the default watchdog_seconds', () => {
  const config = fixtureConfig();
  assert.equal(config.heartbeat_timeout_seconds, HEARTBEAT_TIMEOUT_DEFAULT_SECONDS);
  assert.ok(config.heartbeat_timeout_seconds < config.watchdog_seconds);
});

test('a heartbeat timeout at or above watchdog_seconds is refused, naming both keys', () => {
  for (const timeout of [60, 90]) {
    const { problems } = configErrorOf(() => fixtureConfig({ watchdog_seconds: 60, heartbeat_timeout_seconds: timeout }));
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0], new RegExp(`\`heartbeat_timeout_seconds\`: ${timeout} must be less than watchdog_seconds \\(60\\)`));
  }
});

test('a heartbeat timeout below the least value is refused with what is allowed', () => {
  const { problems } = configErrorOf(() => fixtureConfig({ heartbeat_timeout_seconds: 1 }));
  assert.match(problems.join('\n'), new RegExp(`\`heartbeat_timeout_seconds\`: .*>= ${HEARTBEAT_TIMEOUT_MIN_SECONDS}.*\\(got 1\\)`));
});

test('with the watchdog off any heartbeat timeout of at least the least value is accepted', () => {
  assert.equal(fixtureConfig({ watchdog_seconds: 0, heartbeat_timeout_seconds: 600 }).heartbeat_timeout_seconds, 600);
  assert.equal(fixtureConfig({ watchdog_seconds: 60, heartbeat_timeout_seconds: 2 }).heartbeat_timeout_seconds, 2);
});
