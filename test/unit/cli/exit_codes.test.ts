/**
 * Exit codes of bad input without a server: a run id the store would refuse is exit 2 wherever it is found,
 * and `run-json` / `train` refuse such a `--run-id` before writing anything.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { EXIT, exitCodeOf } from '../../../src/cli/exit_codes';
import { validateRunId } from '../../../src/contract';

test('run-json and train refuse a --run-id the store would refuse, with exit 2, before writing anything', () => {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-runjson-'));
  for (const [command, id] of [
    ['run-json', '..'],
    ['run-json', '.'],
    ['run-json', '.x'],
    ['train', '..'],
  ]) {
    const out = join(dir, 'run.json');
    const args =
      command === 'run-json' ? ['run-json', 'configs/frozen_lake.yaml', '-o', out] : ['train', 'configs/frozen_lake.yaml', '--no-workers'];
    const res = spawnSync(process.execPath, ['bin/starpo.js', ...args, '--run-id', id], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(res.status, 2, `${command} --run-id ${id}: ${res.stderr}`);
    assert.match(res.stderr, new RegExp(`--run-id <id>.*runId "${id.replace(/\./g, '\\.')}" is invalid; allowed: 1-128 characters`));
    assert.deepEqual(readdirSync(dir), [], 'nothing written');
  }
});

test('an invalid run id is bad input (exit 2) wherever it is found', () => {
  for (const id of ['../etc', 'a/b', '']) {
    let err: unknown;
    try {
      validateRunId(id);
    } catch (e) {
      err = e;
    }
    assert.equal(exitCodeOf(err), EXIT.badInput, JSON.stringify(id));
  }
});
