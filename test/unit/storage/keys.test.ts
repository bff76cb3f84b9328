import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidKeyPartError, validateRunId } from '../../../src/contract';
import { CorruptObjectError, isUnusable, ObjectNotFoundError } from '../../../src/storage/errors';
import {
  checkpointPrefix,
  checkpointsPrefix,
  initialKey,
  latestKey,
  metricsKey,
  parseStep,
  rolloutKey,
  rolloutRecordKey,
  runKey,
  stepName,
  warmupPrefix,
} from '../../../src/storage/keys';
import { sha256Hex } from '../../../src/storage/object_store';

test('key layout follows docs/design.md', () => {
  assert.equal(runKey('r1'), 'runs/r1/run.json');
  assert.equal(checkpointPrefix('r1', 10), 'runs/r1/checkpoints/step-000010/');
  assert.equal(checkpointsPrefix('r1'), 'runs/r1/checkpoints/');
  assert.equal(rolloutKey('r1', 10, 'train', 3), 'runs/r1/rollouts/step-000010/train-shard-003.jsonl.gz');
  assert.equal(rolloutKey('r1', 0, 'val', 0), 'runs/r1/rollouts/step-000000/val-shard-000.jsonl.gz');
  assert.equal(metricsKey('r1', 10), 'runs/r1/metrics/step-000010.json');
  assert.equal(latestKey('run-2024.01_a'), 'runs/run-2024.01_a/latest.json');
  assert.equal(initialKey('r1'), 'runs/r1/initial.json');
  assert.equal(rolloutRecordKey('r1', 10, 'train', 3), 'runs/r1/rollouts/step-000010/train-shard-003.json');
  assert.equal(warmupPrefix('ab12cd'), 'warmup/ab12cd/');
});

test('keys are a pure function of their inputs', () => {
  assert.equal(rolloutKey('x', 7, 'train', 1), rolloutKey('x', 7, 'train', 1));
  assert.notEqual(rolloutKey('x', 7, 'train', 1), rolloutKey('x', 7, 'train', 2));
});

test('run ids outside [A-Za-z0-9._-] are rejected with the value named', () => {
  for (const bad of ['', 'a/b', '../x', 'a..b', '-lead', 'sp ace', 'é', 'x'.repeat(129)]) {
    assert.throws(
      () => runKey(bad),
      (err: Error) => err instanceof InvalidKeyPartError && err.message.includes(JSON.stringify(bad)) && err.message.includes('allowed'),
    );
  }
  assert.equal(validateRunId('A.b_c-1'), 'A.b_c-1');
});

test('step, split and shard ranges are enforced', () => {
  assert.throws(() => stepName(-1), /step -1 is invalid; allowed: an integer from 0 to 999999/);
  assert.throws(() => stepName(1.5), /step 1.5/);
  assert.throws(() => stepName(1_000_000), InvalidKeyPartError);
  assert.throws(() => rolloutKey('r', 1, 'Train', 0), /split "Train" is invalid/);
  assert.throws(() => rolloutKey('r', 1, 'train', 1000), /shard 1000 is invalid; allowed: an integer from 0 to 999/);
  assert.throws(() => rolloutRecordKey('r', 1, 'train', -1), /shard -1 is invalid/);
  assert.throws(() => warmupPrefix('a/b'), /warm-up name "a\/b" is invalid/);
});

test('parseStep reads steps back from keys', () => {
  assert.equal(parseStep('runs/r/checkpoints/step-000010/manifest.json'), 10);
  assert.equal(parseStep('runs/r/metrics/step-000003.json'), 3);
  assert.equal(parseStep('step-000000'), 0);
  assert.equal(parseStep('runs/r/checkpoints/other/manifest.json'), null);
});

test('storage errors name key, expected and actual', () => {
  const e = new CorruptObjectError('runs/r/x.bin', 'sha256 aa', 'sha256 bb');
  assert.equal(e.name, 'CorruptObjectError');
  assert.equal(e.key, 'runs/r/x.bin');
  assert.match(e.message, /runs\/r\/x\.bin.*expected sha256 aa, got sha256 bb/);
  const n = new ObjectNotFoundError('starpo', 'k');
  assert.match(n.message, /object k not found in bucket starpo/);
  const m = new CorruptObjectError('runs/r/m.safetensors', 'sha256 aa', 'sha256 bb', 'sha256 mismatch');
  assert.match(m.message, /^object runs\/r\/m\.safetensors is corrupt \(sha256 mismatch\): expected sha256 aa, got sha256 bb$/);
  assert.ok(
    isUnusable(e) && isUnusable(n) && !isUnusable(new Error('ECONNREFUSED')),
    'corrupt and missing objects are unusable, a dead server is not',
  );
});

test('sha256Hex matches a known vector', () => {
  assert.equal(sha256Hex(new TextEncoder().encode('abc')), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
});
