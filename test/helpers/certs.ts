/**
 * Throwaway certificates for TLS tests, made with openssl in a temp folder: a CA, a server certificate
 * for 127.0.0.1 and localhost, and a client certificate (mTLS), all signed by the CA, P-256 keys.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Paths of the PEM files, and `remove` to delete the folder. */
export interface TestCerts {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  remove(): void;
}

const openssl = (args: string[], cwd: string) => execFileSync('openssl', args, { cwd, stdio: 'pipe' });
/** A new P-256 key, unencrypted. */
const NEW_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** Creates a key and a certificate signed by the CA in `dir`, with the given v3 extensions. */
function issue(dir: string, name: string, subject: string, extensions: string): void {
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(['req', ...NEW_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], dir);
  openssl(
    ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial'].concat([
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    ]),
    dir,
  );
}

/** Makes the certificates. @throws when openssl is missing or fails */
export function makeTestCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-certs-'));
  openssl(
    ['req', '-x509', ...NEW_KEY, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=starpo test CA'].concat([
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]),
    dir,
  );
  issue(dir, 'server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  issue(dir, 'client', '/CN=starpo test client', 'extendedKeyUsage=clientAuth\n');
  return {
    dir,
    ca: join(dir, 'ca.pem'),
    serverCert: join(dir, 'server.pem'),
    serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.pem'),
    clientKey: join(dir, 'client.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
