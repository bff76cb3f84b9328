/** The activity watchdog (src/activities/watchdog.ts) in a child process, and its config key. */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import { WATCHDOG_SIGNAL } from '../../../src/activities/watchdog';
import { ConfigError } from '../../../src/contract';
import { validateConfig } from '../../../src/preflight/load';

/** A child running one "activity" under the watchdog (limit 1 s, polled every 100 ms) that reports progress `beats` times, then spins or returns. */
function runChild(spin: boolean) {
  const script = `
    const { startWatchdog, reportProgress } = require('./src/activities/watchdog');
    const intercept = startWatchdog(1, 100)({}).inbound;
    intercept.execute({ args: [], headers: {} }, async () => {
      for (let i = 0; i < 3; i++) { reportProgress(); await new Promise((r) => setTimeout(r, 300)); }
      if (${spin}) for (;;) {}
    }).then(() => console.log('activity done'));`;
  return spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' });
}

test('an activity that stops making progress ends its process with the watchdog signal; one that progresses does not', () => {
  const stalled = runChild(true);
  assert.equal(stalled.signal, WATCHDOG_SIGNAL);
  assert.match(
    stalled.stderr,
    /starpo watchdog: no activity progress for 1 s \(watchdog_seconds 1\); ending worker process \d+ with SIGALRM/,
  );
  // Three reports 300 ms apart (each within the 1 s limit), then a normal return: the process ends by itself.
  const healthy = runChild(false);
  assert.equal(healthy.signal, null);
  assert.equal(healthy.status, 0);
  assert.match(healthy.stdout, /activity done/);
});

test('watchdog_seconds: default 300, 0 switches it off, a value under 10 s names the key, the value and what is allowed', () => {
  const raw = parse(readFileSync('configs/frozen_lake.yaml', 'utf8')) as Record<string, unknown>;
  assert.equal(validateConfig(raw).watchdog_seconds, 300);
  assert.equal(validateConfig({ ...raw, watchdog_seconds: 0 }).watchdog_seconds, 0);
  assert.throws(
    () => validateConfig({ ...raw, watchdog_seconds: 5 }, 'x.yaml'),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, /`watchdog_seconds`: allowed: 0 \(off\) or a number of seconds >= 10 \(got 5\)/);
      return true;
    },
  );
});
