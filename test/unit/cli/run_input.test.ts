/** The default run id a config file gets: the file name fitted to the run-id rule, then the UTC time. */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { newRunId, runInputFromFile } from '../../../src/cli/run_input';
import { isKeyName } from '../../../src/contract';

const NOW = new Date('2026-12-03T15:18:36Z');

test('a config name the run-id rule accepts is kept; any other is fitted to it', () => {
  assert.equal(newRunId('frozen_lake', NOW), 'frozen_lake-20261203-151836');
  assert.equal(newRunId('my config!', NOW), 'my_config_-20261203-151836');
  assert.equal(newRunId('.hidden', NOW), 'hidden-20261203-151836');
  assert.equal(newRunId('a..b', NOW), 'a.b-20261203-151836');
  assert.equal(newRunId('!!!', NOW), 'run-20261203-151836');
  assert.equal(newRunId('x'.repeat(200), NOW), `${'x'.repeat(64)}-20261203-151836`);
  for (const name of ['my config!', '.hidden', 'x'.repeat(200), 'é配置', 'a..b']) assert.ok(isKeyName(newRunId(name, NOW)), name);
});

test('a config file whose name the run-id rule refuses still gets a run id without --run-id', () => {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-run-input-'));
  try {
    const path = join(dir, 'my config!.yaml');
    copyFileSync('test/fixtures/tiny_frozen_lake.yaml', path);
    const { input } = runInputFromFile(path);
    assert.match(input.runId, /^my_config_-\d{8}-\d{6}$/);
    assert.equal(input.configName, 'my config!');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
