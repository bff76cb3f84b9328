/**
 * `starpo report` without a server: the output file (`-o`: bad paths refused naming the option, missing
 * folders created, written whole through a temp file) and the run's state line of the summary.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { checkOutputFile, writeFileAtomically } from '../../../src/cli/file_args';
import { runStateText } from '../../../src/cli/report';
import type { Progress } from '../../../src/contract';

test('report -o: a folder, a path under a file or a folder that takes no file is bad input naming the option; missing folders are created, no temp file stays', () => {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-out-'));
  assert.throws(() => checkOutputFile('-o', dir), {
    name: 'BadInputError',
    message: `-o ${dir}: is a folder; allowed: a writable file path (missing parent folders are created)`,
  });
  writeFileSync(join(dir, 'plain'), 'x');
  assert.throws(() => checkOutputFile('-o', join(dir, 'plain', 'sub', 'r.html')), {
    name: 'BadInputError',
    message: new RegExp(`^-o ${dir}/plain/sub/r\\.html: ${dir}/plain is a file, not a folder`),
  });

  assert.throws(() => checkOutputFile('-o', '/proc/nope.html'), {
    name: 'BadInputError',
    message: /^-o \/proc\/nope\.html: \/proc cannot be written \(no such file\)/,
  });

  const file = checkOutputFile('-o', join(dir, 'new', 'deeper', 'r.html'));
  assert.deepEqual(readdirSync(dir).sort(), ['plain'], 'checking writes nothing');
  writeFileAtomically(file, '<html>1</html>');
  writeFileAtomically(file, '<html>2</html>');
  assert.equal(readFileSync(file, 'utf8'), '<html>2</html>');
  assert.deepEqual(readdirSync(join(dir, 'new', 'deeper')), ['r.html'], 'only the file, no temp file');
});

test('the state line: running phases, closed runs, and unknown when Temporal was not asked', () => {
  const progress: Progress = {
    runId: 'r',
    step: 3,
    maxSteps: 6,
    phase: 'update',
    paused: false,
    stopRequested: null,
    lastMetrics: {},
    lastValidation: null,
    validationCurve: [],
    latestCheckpoint: null,
    secondsPerStep: 4,
    compute: null,
  };
  const base = { runId: 'r', config: 'tiny', step: 3, valSuccess: null };
  assert.equal(
    runStateText({ ...base, status: 'RUNNING', progress: { ...progress, step: 0, phase: 'preparing' } }),
    'RUNNING: in warm-up (preparing the step-0 policy), step 0 of 6 done',
  );
  assert.equal(runStateText({ ...base, status: 'RUNNING', progress }), 'RUNNING: update, step 3 of 6 done');
  assert.equal(
    runStateText({ ...base, status: 'RUNNING', note: 'no control worker answered within 5 s' }),
    'RUNNING, step 3 done (no control worker answered within 5 s)',
  );
  assert.equal(runStateText({ ...base, status: 'FAILED', failure: 'boom' }), 'FAILED: boom');
  assert.equal(
    runStateText(null, 'cannot reach the Temporal server at 127.0.0.1:1'),
    'unknown: cannot reach the Temporal server at 127.0.0.1:1',
  );
});
