/**
 * Pieces of the report / eval / export commands that need no server: the report's output file (bad
 * paths refused naming the option, missing folders created, written whole through a temp file), run id
 * and key errors mapped to exit 2 (a `--run-id` the store would refuse included), the checkpoint an eval target names in messages, and the eval
 * progress text from the rollout activities' heartbeat details.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { checkOutputFile, writeFileAtomically } from '../../../src/cli/report';
import { EXIT, exitCodeOf } from '../../../src/cli/exit_codes';
import { parseTarget } from '../../../src/cli/eval_target';
import { rolloutActivityText } from '../../../src/cli/eval';
import { validateRunId } from '../../../src/contract';

test('report -o: a folder or a path under a file is bad input naming the option; missing folders are created, no temp file stays', () => {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-out-'));
  assert.throws(() => checkOutputFile('-o', dir), { name: 'BadInputError', message: `-o ${dir}: is a folder; allowed: a file path (missing parent folders are created)` });
  writeFileSync(join(dir, 'plain'), 'x');
  assert.throws(() => checkOutputFile('-o', join(dir, 'plain', 'sub', 'r.html')), { name: 'BadInputError', message: new RegExp(`^-o ${dir}/plain/sub/r\\.html: ${dir}/plain is a file, not a folder`) });

  const file = checkOutputFile('-o', join(dir, 'new', 'deeper', 'r.html'));
  assert.deepEqual(readdirSync(dir).sort(), ['plain'], 'checking writes nothing');
  writeFileAtomically(file, '<html>1</html>');
  writeFileAtomically(file, '<html>2</html>');
  assert.equal(readFileSync(file, 'utf8'), '<html>2</html>');
  assert.deepEqual(readdirSync(join(dir, 'new', 'deeper')), ['r.html'], 'only the file, no temp file');
});

test('run-json and train refuse a --run-id the store would refuse, with exit 2, before writing anything', () => {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-runjson-'));
  for (const [command, id] of [['run-json', '..'], ['run-json', '.'], ['run-json', '.x'], ['train', '..']]) {
    const out = join(dir, 'run.json');
    const args = command === 'run-json' ? ['run-json', 'configs/frozen_lake.yaml', '-o', out] : ['train', 'configs/frozen_lake.yaml', '--no-workers'];
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

test('eval targets name their checkpoint as given: the key, --step N, or the latest checkpoint', () => {
  const key = 'runs/r1/checkpoints/step-000099/manifest.json';
  assert.deepEqual(parseTarget({ target: key }), { runId: 'r1', step: 99, label: key });
  assert.deepEqual(parseTarget({ target: 'r1', step: 7 }), { runId: 'r1', step: 7, label: '--step 7' });
  assert.deepEqual(parseTarget({ target: 'r1' }), { runId: 'r1', step: undefined, label: 'latest checkpoint' });
  assert.throws(() => parseTarget({ target: 'runs/../checkpoints/step-000001/manifest.json' }), { name: 'InvalidKeyPartError' });
  assert.throws(() => parseTarget({ target: '../etc' }), { name: 'BadInputError', message: /^\.\.\/etc: not a run id or a checkpoint key/ });
});

test('eval progress inside a shard: env resets, then the turn and the episodes still playing per running shard', () => {
  assert.equal(rolloutActivityText([]), 'shard rollouts starting');
  assert.equal(rolloutActivityText([{ turn: -1, active: 3 }]), 'resetting envs (3)');
  assert.equal(rolloutActivityText([{ turn: 0, active: 8 }, { turn: 2, active: 5 }, {}]), 'turn 1: 8 episodes playing, turn 3: 5 episodes playing');
});
