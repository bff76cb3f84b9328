/** `starpo env serve` refuses what the bridge cannot serve before it makes a venv or starts anything (exit 2). */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

const serve = (...args: string[]) => spawnSync(process.execPath, ['bin/starpo.js', 'env', 'serve', ...args], { encoding: 'utf8' });

test('a spec not of the form <family or module>:<name> exits 2, naming it and the specs the bridge serves', () => {
  for (const spec of ['nope', 'reasoning_gym:', 'my env.py:Env', ':Env']) {
    const r = serve(spec);
    assert.equal(r.status, 2, r.stderr);
    assert.ok(r.stderr.includes(`env spec "${spec}" is not one the bridge serves; allowed: gymnasium:FrozenLake-v1`), r.stderr);
    assert.match(r.stderr, /reasoning_gym:<dataset>.*<module or file\.py>:<Class>/);
  }
});

test('a config that is not a JSON object, a port or a session count out of range exits 2, naming the value', () => {
  const config = serve('gymnasium:FrozenLake-v1', '--config', '[1, 2]');
  assert.equal(config.status, 2);
  assert.match(config.stderr, /"\[1, 2\]" is not a JSON object/);
  const port = serve('gymnasium:FrozenLake-v1', '--port', '70000');
  assert.equal(port.status, 2);
  assert.match(port.stderr, /--port "70000" is not an integer in \[1, 65535\]/);
  const sessions = serve('gymnasium:FrozenLake-v1', '--max-sessions', '0');
  assert.equal(sessions.status, 2);
  assert.match(sessions.stderr, /--max-sessions "0" is not an integer in \[1, 100000\]/);
});
