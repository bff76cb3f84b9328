/**
 * Worker processes that `starpo train` starts: one that exits by itself (here: a `--backend` it refuses, as a
 * worker whose backend cannot load exits at start) is reported through `died` with its role, exit code and
 * log file, so train can end saying so instead of waiting for a worker that is gone. Nothing is reported for
 * workers stopped on purpose. No servers: the worker exits before it connects.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { InfraEndpoints } from '../../../infra/types';
import { spawnWorkers } from '../../../src/cli/spawn_workers';
import type { BackendName } from '../../../src/model/backend_choice';

// Unreachable loopback ports: a worker that got as far as connecting would wait, not exit.
const endpoints: InfraEndpoints = {
  temporalAddress: '127.0.0.1:1',
  temporalNamespace: 'default',
  managed: false,
  s3: { endPoint: '127.0.0.1', port: 1, useSSL: false, accessKey: 'a', secretKey: 'b', bucket: 'starpo' },
};

test('a worker that exits by itself is reported with its role, exit code and log; a stopped one is not', async () => {
  const logDir = mkdtempSync(join(tmpdir(), 'starpo-spawn-'));
  try {
    const workers = spawnWorkers(['update'], endpoints, logDir, { update: 'no-such-backend' as BackendName });
    const exit = await workers.died;
    assert.deepEqual(
      { role: exit.role, code: exit.code, signal: exit.signal, log: exit.log },
      { role: 'update', code: 2, signal: null, log: join(logDir, 'update.log') },
    );
    assert.match(
      readFileSync(exit.log, 'utf8'),
      /--backend <name>.*'no-such-backend' is invalid.*backend "no-such-backend" is not known; allowed: tensorflow-gpu, tensorflow, wasm, cpu/,
    );
    await workers.stop();

    const stopped = spawnWorkers(['control'], endpoints, logDir);
    let reported = false;
    void stopped.died.then(() => {
      reported = true;
    });
    await stopped.stop(5);
    await new Promise((r) => setImmediate(r));
    assert.equal(reported, false, 'a worker stopped on purpose is not a death');
  } finally {
    rmSync(logDir, { recursive: true, force: true });
  }
});
