/**
 * infra lifecycle against the real binaries: up -> status -> up again (same pids) -> Temporal has the
 * search attributes -> down -> up again keeps data and keys -> down. Servers are stopped even on failure.
 */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { Connection } from '@temporalio/client';
import { endpointsFromEnv } from '../../infra/env';
import { infraDown, infraStatus, infraUp } from '../../infra/lifecycle';
import { freePort } from '../../infra/ports';
import { isAlive } from '../../infra/process';
import { SEARCH_ATTRIBUTES } from '../../infra/search_attributes';
import { readState } from '../../infra/state';
import { STARPO_BIN } from '../../src/cli/spawn_workers';
import { ObjectStore } from '../../src/storage/object_store';

const skip = endpointsFromEnv() ? 'TEMPORAL_ADDRESS/S3_ENDPOINT set: local infra is not started' : false;
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'starpo-infra-it-'));
after(async () => {
  await infraDown({ stateDir });
  fs.rmSync(stateDir, { recursive: true, force: true });
});

test('infra up/status/up/down is idempotent and serves Temporal with the search attributes and S3', { skip }, async () => {
  const taken = new Set<number>();
  const ports = { temporalPort: await freePort(taken), uiPort: await freePort(taken), s3Port: await freePort(taken) };
  const lines: string[] = [];
  const e = await infraUp({ stateDir, ...ports, log: (l) => lines.push(l) });
  assert.equal(e.managed, true);
  assert.equal(e.temporalAddress, `127.0.0.1:${ports.temporalPort}`);
  assert.equal(e.temporalUiUrl, `http://127.0.0.1:${ports.uiPort}`);
  assert.equal(e.s3.port, ports.s3Port);
  assert.equal(e.s3.endPoint, '127.0.0.1');
  assert.ok(
    lines.some((l) => /healthy/.test(l)),
    lines.join('\n'),
  );

  const s1 = await infraStatus({ stateDir });
  assert.equal(s1.running, true);
  assert.equal(s1.processes.length, 2);
  assert.ok(s1.processes.every((p) => p.alive));
  assert.deepEqual(s1.endpoints, e);

  const again = await infraUp({ stateDir });
  assert.deepEqual(again, e);
  const s2 = await infraStatus({ stateDir });
  assert.deepEqual(
    s2.processes.map((p) => p.pid),
    s1.processes.map((p) => p.pid),
    'second up reuses the same pids',
  );

  const conn = await Connection.connect({ address: e.temporalAddress });
  try {
    const info = await conn.workflowService.getSystemInfo({});
    assert.ok(info.serverVersion);
    const sa = await conn.operatorService.listSearchAttributes({ namespace: e.temporalNamespace });
    const typeNames: Record<string, number> = { Keyword: 2, Int: 3, Double: 4 };
    for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
      assert.equal(sa.customAttributes?.[name], typeNames[type], `${name} registered as ${type}`);
    }
  } finally {
    await conn.close();
  }

  const store = new ObjectStore(e.s3);
  const ref = await store.put('infra-test/hello.txt', new TextEncoder().encode('hello'));

  const st = readState(stateDir);
  const records = [st.temporal?.process, st.s3?.process].filter((r): r is NonNullable<typeof r> => !!r);
  assert.equal(records.length, 2);
  const downLines: string[] = [];
  await infraDown({ stateDir, log: (l) => downLines.push(l) });
  assert.equal(downLines.length, 2, downLines.join('\n'));
  for (const line of downLines) assert.match(line, /\(pid \d+\): stopped( \(SIGKILL after \d+ s of SIGTERM\))?$/);
  const s3 = await infraStatus({ stateDir });
  assert.equal(s3.running, false);
  assert.equal(s3.processes.length, 0);
  for (const rec of records) assert.equal(isAlive(rec), false, `pid ${rec.pid} is gone`);
  await infraDown({ stateDir }); // idempotent

  const back = await infraUp({ stateDir });
  assert.deepEqual(back.s3, e.s3, 'keys and ports are kept across restarts');
  assert.equal(new TextDecoder().decode(await new ObjectStore(back.s3).get(ref)), 'hello', 'data survives a restart');
  const s4 = await infraStatus({ stateDir });
  assert.ok(
    s4.processes.every((p, i) => p.pid !== s1.processes[i]?.pid),
    'restarted with new pids',
  );
  await infraDown({ stateDir });
});

test('`infra env` points the temporal CLI and starpo at the servers on the ports they took; infra status and down still treat them as local', {
  skip,
}, async () => {
  const e = await infraUp({ stateDir }); // the free ports the first test picked, none of them a default
  assert.notEqual(e.temporalAddress, '127.0.0.1:7233');
  const starpo = `${JSON.stringify(process.execPath)} ${JSON.stringify(STARPO_BIN)}`;
  const script = [
    `eval "$(${starpo} infra env --state-dir ${stateDir})"`,
    'temporal operator search-attribute list',
    `temporal workflow list --query 'StarpoConfig="frozen_lake"'`,
    `${starpo} infra status --state-dir ${stateDir}`,
    `${starpo} infra down --state-dir ${stateDir}`,
  ].join(' && ');
  const out = execFileSync('bash', ['-c', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  assert.match(out, /StarpoRunId/);
  assert.match(out, /^infra running\n {2}temporal +pid \d+/m);
  assert.match(out, new RegExp(`Temporal: +${e.temporalAddress.replaceAll('.', '\\.')} `));
  assert.match(out, /^infra stopped$/m);
  assert.equal((await infraStatus({ stateDir })).running, false);
});
