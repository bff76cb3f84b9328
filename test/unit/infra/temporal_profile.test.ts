/**
 * The Temporal cluster read from a temporal.toml profile and the TEMPORAL_* variables (@temporalio/envconfig):
 * what reaches the connection options, which variable wins, and errors that name the file, profile or
 * variable but never a secret's value; infra commands print no external secret.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { printableEndpoints } from '../../../infra/cli';
import { endpointsFromEnv, endpointsToEnv } from '../../../infra/env';
import { InfraConfigError } from '../../../infra/errors';
import { temporalConnectOptions } from '../../../infra/temporal_profile';
import { STARPO_BIN } from '../../../src/cli/spawn_workers';

const dir = mkdtempSync(join(tmpdir(), 'starpo-profile-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const ca = file('ca.pem', '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n');
const crt = file('client.pem', '-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n');
const key = file('client.key', '-----BEGIN PRIVATE KEY-----\nCLIENTKEYSECRET\n-----END PRIVATE KEY-----\n');
const toml = file(
  'temporal.toml',
  `[profile.cloud]
address = "ns.acct.tmprl.cloud:7233"
namespace = "ns.acct"
[profile.cloud.tls]
server_ca_cert_path = "${ca}"
client_cert_path = "${crt}"
client_key_path = "${key}"
`,
);
const S3 = { S3_ENDPOINT: 'https://s3.eu-west-1.amazonaws.com', S3_ACCESS_KEY: 'AKIA', S3_SECRET_KEY: 'S3SECRET', S3_REGION: 'eu-west-1' };
/** Asserts `fn` throws InfraConfigError matching `message` and holding none of `secrets`. */
function refuses(fn: () => unknown, message: RegExp, secrets: string[] = []): void {
  assert.throws(fn, (err: Error) => {
    assert.ok(err instanceof InfraConfigError, err.message);
    assert.match(err.message, message);
    for (const s of secrets) assert.ok(!err.message.includes(s), `${s} in ${err.message}`);
    return true;
  });
}

test('a profile gives address, namespace and mTLS; TEMPORAL_API_KEY adds the key; TEMPORAL_NAMESPACE wins', () => {
  const e = endpointsFromEnv({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'cloud', TEMPORAL_API_KEY: 'APIKEY', ...S3 });
  assert.ok(e);
  assert.equal(e.temporalNamespace, 'ns.acct');
  assert.deepEqual(e.s3, {
    endPoint: 's3.eu-west-1.amazonaws.com',
    port: 443,
    useSSL: true,
    accessKey: 'AKIA',
    secretKey: 'S3SECRET',
    bucket: 'starpo',
    region: 'eu-west-1',
  });
  const options = temporalConnectOptions(e);
  assert.equal(options.address, 'ns.acct.tmprl.cloud:7233');
  assert.equal(options.apiKey, 'APIKEY');
  const tls = options.tls as { serverRootCACertificate: Uint8Array; clientCertPair: { crt: Uint8Array; key: Uint8Array } };
  assert.deepEqual(Buffer.from(tls.serverRootCACertificate), readFileSync(ca));
  assert.deepEqual(Buffer.from(tls.clientCertPair.crt), readFileSync(crt));
  assert.deepEqual(Buffer.from(tls.clientCertPair.key), readFileSync(key));
  const other = endpointsFromEnv({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'cloud', TEMPORAL_NAMESPACE: 'other', ...S3 });
  assert.equal(other?.temporalNamespace, 'other');
});

test('an API key alone turns TLS on; a plain address has no auth; the session token goes to the workers', () => {
  const keyed = endpointsFromEnv({ TEMPORAL_ADDRESS: 'h:7233', TEMPORAL_API_KEY: 'APIKEY', ...S3, S3_SESSION_TOKEN: 'TOKEN' });
  assert.deepEqual(keyed?.temporalAuth, { apiKey: 'APIKEY', tls: true });
  assert.equal(keyed?.s3.sessionToken, 'TOKEN');
  assert.equal(endpointsToEnv(keyed as NonNullable<typeof keyed>).S3_SESSION_TOKEN, 'TOKEN');
  const plain = endpointsFromEnv({ TEMPORAL_ADDRESS: 'h:7233', ...S3 });
  assert.equal(plain?.temporalAuth, undefined);
  assert.deepEqual(temporalConnectOptions(plain as NonNullable<typeof plain>), { address: 'h:7233' });
});

test('errors name the file, profile or variable, never a secret', () => {
  refuses(
    () => endpointsFromEnv({ TEMPORAL_CONFIG_FILE: join(dir, 'missing.toml') }),
    /TEMPORAL_CONFIG_FILE=".*missing.toml" is not a file/,
  );
  refuses(() => endpointsFromEnv({ TEMPORAL_CONFIG_FILE: dir }), /is not a file/);
  refuses(() => endpointsFromEnv({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'nope', ...S3 }), /profile "nope" of .*temporal.toml/);
  const broken = file('broken.toml', '[profile.default]\napi_key = "BROKENSECRET\n');
  refuses(() => endpointsFromEnv({ TEMPORAL_CONFIG_FILE: broken }), /profile "default" of .*broken.toml \(line 2, column \d+\)/, [
    'BROKENSECRET',
  ]);
  const noFile = file(
    'nofile.toml',
    `[profile.default]\naddress = "h:1"\n[profile.default.tls]\nclient_key_path = "${join(dir, 'gone.key')}"\n`,
  );
  refuses(
    () => endpointsFromEnv({ TEMPORAL_CONFIG_FILE: noFile, ...S3 }),
    /cannot read a TLS file of Temporal profile "default" .*gone.key/,
  );
  refuses(() => endpointsFromEnv({ TEMPORAL_API_KEY: 'APIKEY' }), /an API key is set .* but no address/, ['APIKEY']);
  refuses(
    () => endpointsFromEnv({ TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'cloud' }),
    /ns.acct.tmprl.cloud:7233 is set \(profile "cloud" of .*\) but S3_ENDPOINT is not/,
  );
});

test('infra output hides the secrets of external servers and keeps those of the local ones', () => {
  const e = endpointsFromEnv({
    TEMPORAL_CONFIG_FILE: toml,
    TEMPORAL_PROFILE: 'cloud',
    TEMPORAL_API_KEY: 'APIKEY',
    ...S3,
    S3_SESSION_TOKEN: 'TOKEN',
  });
  assert.ok(e);
  const shown = JSON.stringify(printableEndpoints(e));
  for (const secret of ['APIKEY', 'S3SECRET', 'TOKEN', 'CLIENTKEYSECRET']) assert.ok(!shown.includes(secret), secret);
  assert.match(shown, /"tls":true/);
  const local = { ...e, temporalAuth: undefined, managed: true };
  assert.equal(printableEndpoints(local), local);
});

test('--namespace and --profile refuse an empty value with exit 2', () => {
  const res = spawnSync(process.execPath, [STARPO_BIN, 'status', 'some-run', '--namespace', ' '], { encoding: 'utf8' });
  assert.equal(res.status, 2);
  assert.match(res.stderr, /--namespace <namespace>.*" " is empty/);
});
