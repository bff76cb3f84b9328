/**
 * Malformed inputs through the real `starpo` command: each exits 2 with the key or the file named, a
 * short printable message and no stack trace, in a child whose heap is bounded (a 50 MB file read whole,
 * an alias bomb or an exploding interpolation would run it out of memory instead).
 * Wall time and peak memory per case: bench/malformed_inputs.ts.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { malformedCases } from '../../helpers/malformed_inputs';

/** The heap a child may use: far below what reading or expanding any of the inputs would take. */
const HEAP_MB = 256;

function starpo(args: string[]) {
  return spawnSync(process.execPath, [`--max-old-space-size=${HEAP_MB}`, 'bin/starpo.js', ...args], { encoding: 'utf8', timeout: 60_000 });
}

/** Exit 2, the expected name in stderr, a short printable message, no stack trace. */
function assertRefused(res: ReturnType<typeof starpo>, names: RegExp, what: string): void {
  assert.equal(res.status, 2, `${what}: exit ${res.status}\n${res.stderr}`);
  assert.match(res.stderr, names, what);
  assert.doesNotMatch(res.stderr, /^ {4}at /m, `${what}: a stack trace`);
  assert.ok(res.stderr.length < 2000, `${what}: ${res.stderr.length} characters of message`);
  assert.doesNotMatch(res.stderr, /(?![\t\n\r])\p{Cc}|\ufffd/u, `${what}: unprintable characters in the message`);
}

const inputs = mkdtempSync(join(tmpdir(), 'starpo-malformed-'));
after(() => rmSync(inputs, { recursive: true, force: true }));

for (const c of malformedCases(inputs)) {
  test(`malformed input: ${c.name} -> exit 2, named, no stack trace`, { skip: c.skip }, () => {
    assertRefused(starpo(c.args), c.names, c.name);
  });
}

test('every command that takes a file or folder refuses a folder or a missing path with exit 2, naming it, before anything starts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-fileargs-'));
  const folder = join(dir, 'a-folder');
  mkdirSync(folder);
  const missing = join(dir, 'missing.yaml');
  const file = join(dir, 'plain');
  const cases: Array<[string[], string]> = [];
  for (const path of [folder, missing]) {
    cases.push(
      [['config', 'check', path], path],
      [['config', 'print', path], path],
      [['run-json', path, '-o', join(dir, 'run.json')], path],
      [['train', path, '--no-workers'], path],
      [['eval', 'some-run', '--config', path, '--no-workers'], path],
      [['backend', 'check', '--config', path], path],
      [['generate', '--model', 'tiny', '--chat', path], `--chat ${path}`],
      [['generate', '--model', path, '--prompt', 'hi'], `--model ${path}`],
    );
  }
  cases.push(
    [['run-json', 'configs/frozen_lake.yaml', '-o', folder], `-o ${folder}: is a folder`],
    [['run-json', 'configs/frozen_lake.yaml', '-o', join(file, 'run.json')], `${file} is a file`],
    [['infra', 'status', '--state-dir', file], file],
  );
  spawnSync('touch', [file]);
  for (const [args, named] of cases) {
    const res = starpo(args);
    assertRefused(res, new RegExp(named.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), args.join(' '));
  }
  assert.deepEqual(readdirSync(dir).sort(), ['a-folder', 'plain'], 'nothing written');
  assert.deepEqual(readdirSync(folder), []);
  rmSync(dir, { recursive: true });
});
