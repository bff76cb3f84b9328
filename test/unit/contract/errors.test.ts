/**
 * The contract's non-retryable error classes reach Temporal under their type: an activity worker turns a
 * thrown error into an ApplicationFailure named by its class (ensureApplicationFailure, as
 * @temporalio/worker's activity.ts does), so a class named otherwise would be retried forever.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ensureApplicationFailure } from '@temporalio/common';
import { ConfigError, EnvFailureError, InvalidKeyPartError, NON_RETRYABLE_ERROR_TYPES } from '../../../src/contract';
import { CorruptObjectError } from '../../../src/storage/errors';

test('each non-retryable error class is reported under a non-retryable failure type, its own name', () => {
  const thrown = [
    new ConfigError('x.yaml', ['seed: bad']),
    new EnvFailureError('Lake env 0: reset threw'),
    new InvalidKeyPartError('step -1 is invalid'),
    new CorruptObjectError('runs/a/run.json', 'sha256 ab', 'sha256 cd'),
  ];
  for (const err of thrown) {
    const { type, nonRetryable } = ensureApplicationFailure(err);
    assert.equal(type, err.name);
    assert.ok(type && NON_RETRYABLE_ERROR_TYPES.includes(type), `${type} is retried`);
    assert.equal(nonRetryable, false, 'left to the retry policy (nonRetryableErrorTypes)');
  }
  assert.deepEqual(thrown.map((e) => e.name).sort(), [...NON_RETRYABLE_ERROR_TYPES].sort(), 'one class per non-retryable type');
});
