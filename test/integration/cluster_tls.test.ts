/**
 * starpo against a cluster reached the way a team's is: Temporal over TLS with a client certificate
 * (mTLS) and an API key, read from a temporal.toml profile chosen with --profile, and S3 over https with
 * a private CA (NODE_EXTRA_CA_CERTS). The test servers speak plaintext, so TLS proxies stand in front of
 * them (helpers/tls_proxies.ts; the Temporal one refuses calls without the key). The CLI runs as child
 * processes: train (its workers spawned by it), status, stop, report; then the secret values are looked
 * for in the workflow history, the worker logs, the report and every command's output, errors included.
 */

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { ensureNamespace } from '../../bench/lib/bench_run';
import { endpointsFromEnv } from '../../infra/env';
import { STARPO_BIN } from '../../src/cli/spawn_workers';
import type { RunStatus } from '../../src/contract';
import { makeTestCerts, type TestCerts } from '../helpers/certs';
import { startTestServers, type TestServers } from '../helpers/servers';
import { type GrpcProxyStats, startGrpcTlsProxy, startTlsPipe, type TlsProxy } from '../helpers/tls_proxies';

const skip = endpointsFromEnv() ? 'TEMPORAL_ADDRESS/S3_ENDPOINT set: this test puts its own proxies before its own servers' : false;

const NAMESPACE = 'starpo-tls';
const API_KEY = `apikey-${Date.now().toString(36)}-5f1c9e2a7b`;
const SESSION_TOKEN = `sessiontoken-${Date.now().toString(36)}-0d3b8a61e4`;
const FIXTURE = resolve('test/fixtures/tiny_frozen_lake.yaml');

let servers: TestServers;
let certs: TestCerts;
let grpc: TlsProxy & { stats: GrpcProxyStats };
let s3: TlsProxy & { seen: Set<string> };
/** Working folder of the CLI runs (worker logs land in its .starpo/logs) and of the profile file. */
let cwd: string;
/** Everything the commands printed, to search for secrets. */
const printed: string[] = [];

/** The parent's environment without any server variables, plus `extra`. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(TEMPORAL_|S3_|STARPO_STATE_DIR)/.test(k)));
  return { ...env, ...extra };
}

/** The environment of a command on the TLS cluster: the profile file, the API key, S3 over https. */
function clusterEnv(over: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cleanEnv({
    TEMPORAL_CONFIG_FILE: join(cwd, 'temporal.toml'),
    TEMPORAL_API_KEY: API_KEY,
    S3_ENDPOINT: `https://127.0.0.1:${s3.port}`,
    S3_ACCESS_KEY: servers.endpoints.s3.accessKey,
    S3_SECRET_KEY: servers.endpoints.s3.secretKey,
    S3_REGION: 'us-east-1',
    NODE_EXTRA_CA_CERTS: certs.ca,
    ...over,
  });
}

/** Runs `starpo ...args`; its output is kept for the secret search. */
function starpo(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [STARPO_BIN, ...args], { env, cwd }, (err, stdout, stderr) => {
      printed.push(stdout, stderr);
      done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

before(async () => {
  if (skip) return;
  servers = await startTestServers();
  await ensureNamespace(servers.endpoints, NAMESPACE);
  certs = makeTestCerts();
  grpc = await startGrpcTlsProxy(servers.endpoints.temporalAddress, certs, API_KEY);
  s3 = await startTlsPipe('127.0.0.1', servers.endpoints.s3.port, certs, [`x-amz-security-token: ${SESSION_TOKEN}`]);
  cwd = mkdtempSync(join(tmpdir(), 'starpo-cluster-'));
  writeFileSync(
    join(cwd, 'temporal.toml'),
    [
      '[profile.cluster]',
      `address = "127.0.0.1:${grpc.port}"`,
      `namespace = "${NAMESPACE}"`,
      '[profile.cluster.tls]',
      `server_ca_cert_path = "${certs.ca}"`,
      `client_cert_path = "${certs.clientCert}"`,
      `client_key_path = "${certs.clientKey}"`,
      '',
    ].join('\n'),
  );
});

after(async () => {
  await grpc?.close();
  await s3?.close();
  await servers?.stop();
  certs?.remove();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

/** A history as text: payloads (memo, search attributes, inputs, results) decoded as UTF-8. */
function historyText(history: unknown): string {
  return JSON.stringify(history, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : v));
}

test('train, status, stop and report through TLS, mTLS and an API key; no secret in history, logs, reports or output', {
  skip,
}, async () => {
  const runId = `tls-${Date.now()}`;
  const profile = ['--profile', 'cluster'];
  const train = spawn(
    process.execPath,
    [STARPO_BIN, 'train', FIXTURE, 'max_steps=40', '--run-id', runId, '--rollout-workers', '1', ...profile],
    {
      env: clusterEnv(),
      cwd,
    },
  );
  let trainOut = '';
  for (const s of [train.stdout, train.stderr]) s.on('data', (d: Buffer) => (trainOut += d.toString()));
  const trained = new Promise<number | null>((r) => train.once('exit', r));

  // status --json until 2 steps are done (the run is far from its 40)
  let status: RunStatus;
  for (;;) {
    const res = await starpo(['status', runId, '--json', ...profile], clusterEnv());
    if (res.code === 0) {
      status = JSON.parse(res.stdout) as RunStatus;
      if ((status.progress?.step ?? 0) >= 2) break;
    }
    assert.ok(res.code === 0 || /unknown run id/.test(res.stderr), `status: ${res.stderr}`);
    assert.equal(train.exitCode, null, `train exited early:\n${trainOut}`);
    await new Promise((r) => setTimeout(r, 2000));
  }
  assert.equal(status.status, 'RUNNING');

  const stop = await starpo(['stop', runId, '--reason', 'enough', ...profile], clusterEnv());
  assert.equal(stop.code, 0, stop.stderr);
  assert.equal(await trained, 0, trainOut);
  printed.push(trainOut);
  assert.match(trainOut, /stopped early by stop: enough/);

  const closed = await starpo(['status', runId, '--json', ...profile], clusterEnv());
  assert.equal(closed.code, 0, closed.stderr);
  const final = JSON.parse(closed.stdout) as RunStatus;
  assert.equal(final.status, 'COMPLETED');
  assert.equal(final.result?.stoppedBy, 'stop: enough');

  const report = join(cwd, 'report.html');
  const reported = await starpo(['report', runId, '-o', report, ...profile], clusterEnv());
  assert.equal(reported.code, 0, reported.stderr);
  assert.ok(readFileSync(report, 'utf8').includes(runId));

  // The local servers, told the namespace: the run is found (TEMPORAL_NAMESPACE used to be ignored there).
  const local = cleanEnv({ STARPO_STATE_DIR: servers.stateDir as string });
  const inNamespace = await starpo(['status', runId, '--json', '--namespace', NAMESPACE], local);
  assert.equal(inNamespace.code, 0, inNamespace.stderr);
  assert.equal((JSON.parse(inNamespace.stdout) as RunStatus).status, 'COMPLETED');
  const elsewhere = await starpo(['status', runId], local);
  assert.equal(elsewhere.code, 2);
  assert.match(elsewhere.stderr, /unknown run id/);
  // resume finds the servers up once, then names the unknown id (it used to report the servers twice).
  const resumed = await starpo(['resume', 'no-such-run', '--no-workers'], local);
  assert.equal(resumed.code, 2, resumed.stderr);
  assert.match(resumed.stderr, /unknown run id "no-such-run"/);
  const told = `${resumed.stdout}${resumed.stderr}`.match(/already running/g) ?? [];
  assert.equal(told.length, 2, `one line per server: ${resumed.stdout}${resumed.stderr}`);

  // Errors: a wrong API key (refused by the proxy), a session token the S3 server does not know, an unknown run.
  const refusedBefore = grpc.stats.refused;
  const wrongKey = `wrongkey-${Date.now().toString(36)}-93ac`;
  const denied = await starpo(['status', runId, ...profile], clusterEnv({ TEMPORAL_API_KEY: wrongKey }));
  assert.notEqual(denied.code, 0);
  assert.ok(grpc.stats.refused > refusedBefore, 'the proxy refused the wrong key');
  const badToken = await starpo(['report', runId, '-o', join(cwd, 'r2.html'), ...profile], clusterEnv({ S3_SESSION_TOKEN: SESSION_TOKEN }));
  assert.notEqual(badToken.code, 0);
  assert.ok(s3.seen.has(`x-amz-security-token: ${SESSION_TOKEN}`), 'the session token was sent');
  const unknown = await starpo(['stop', 'no-such-run', ...profile], clusterEnv());
  assert.equal(unknown.code, 2);
  const infra = await starpo(['infra', 'status', '--json'], clusterEnv({ TEMPORAL_PROFILE: 'cluster', S3_SESSION_TOKEN: SESSION_TOKEN }));
  assert.equal(infra.code, 0, infra.stderr);
  assert.ok(grpc.stats.forwarded > 0);

  // Where the secrets must not be.
  const client = new Client({ connection: await Connection.connect({ address: servers.endpoints.temporalAddress }), namespace: NAMESPACE });
  const history = historyText(await client.workflow.getHandle(runId).fetchHistory());
  const described = await client.workflow.getHandle(runId).describe();
  await client.connection.close();
  assert.match(history, new RegExp(runId), 'the history text holds the run');
  const logDir = join(cwd, '.starpo', 'logs', runId);
  const logs = readdirSync(logDir).map((f) => readFileSync(join(logDir, f), 'utf8'));
  assert.ok(
    logs.some((l) => /polling/.test(l)),
    'worker logs were read',
  );
  const places: Record<string, string> = {
    history,
    'memo and search attributes': historyText({ memo: described.memo, search: described.searchAttributes }),
    'worker logs': logs.join('\n'),
    report: readFileSync(report, 'utf8'),
    'command output': printed.join('\n'),
  };
  const keyLines = readFileSync(certs.clientKey, 'utf8')
    .split('\n')
    .filter((l) => l.length >= 40 && !l.startsWith('-----'));
  const secrets: Record<string, string> = {
    'API key': API_KEY,
    'wrong API key': wrongKey,
    'S3 secret key': servers.endpoints.s3.secretKey,
    'S3 session token': SESSION_TOKEN,
    ...Object.fromEntries(keyLines.map((l, i) => [`client key line ${i + 1}`, l])),
  };
  assert.ok(keyLines.length > 0);
  for (const [where, text] of Object.entries(places))
    for (const [what, secret] of Object.entries(secrets)) assert.ok(!text.includes(secret), `${what} found in ${where}`);
});
