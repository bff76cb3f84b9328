/**
 * The local S3 server: MinIO when a `minio` binary is on PATH or MINIO_BINARY names one, else
 * SeaweedFS `weed server -s3`; command lines, the health check, and bringing it up or reusing the one
 * recorded in state.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type * as Minio from 'minio';
import { WEED_BINARY } from './binaries';
import { ensureBinary } from './install';
import { pickPort } from './ports';
import { isAlive, spawnDetached, waitHealthy } from './process';
import type { InfraState, StartContext } from './state';
import type { ProcessRecord, S3Endpoint } from './types';

/** Internal ports of `weed server` that we always set, so nothing lands on a default port (TCP, 127.0.0.1). */
export const WEED_PORT_NAMES = ['s3', 's3Grpc', 'master', 'masterGrpc', 'volume', 'volumeGrpc', 'filer', 'filerGrpc'] as const;
/** Internal ports of `minio server`. */
export const MINIO_PORT_NAMES = ['s3', 'console'] as const;

/** Absolute path of a MinIO binary from MINIO_BINARY or PATH, else null. */
export function findMinio(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.MINIO_BINARY) {
    if (!fs.existsSync(env.MINIO_BINARY))
      throw new Error(`MINIO_BINARY=${env.MINIO_BINARY} does not exist; unset it or point it at a minio executable`);
    return path.resolve(env.MINIO_BINARY);
  }
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir || '.', 'minio');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return path.resolve(candidate);
    } catch {
      /* not here */
    }
  }
  return null;
}

/** Writes the SeaweedFS S3 identity file (one admin identity with our keys) and returns its path. Mode 0600. */
export function writeWeedS3Config(stateDir: string, accessKey: string, secretKey: string): string {
  const file = path.join(stateDir, 's3-identities.json');
  const config = {
    identities: [{ name: 'starpo', credentials: [{ accessKey, secretKey }], actions: ['Admin', 'Read', 'List', 'Tagging', 'Write'] }],
  };
  fs.writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  return file;
}

/** argv of `weed server` with every listener on 127.0.0.1 and data in `<stateDir>/s3`. */
export function weedArgs(stateDir: string, ports: Record<string, number>, s3ConfigFile: string): string[] {
  const dataDir = path.join(stateDir, 's3');
  fs.mkdirSync(dataDir, { recursive: true });
  const p = (name: (typeof WEED_PORT_NAMES)[number]) => {
    const v = ports[name];
    if (v === undefined) throw new Error(`weed port ${name} missing from infra state`);
    return String(v);
  };
  return [
    'server',
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-dir=${dataDir}`,
    `-master.port=${p('master')}`,
    `-master.port.grpc=${p('masterGrpc')}`,
    '-master.telemetry=false',
    '-master.volumeSizeLimitMB=1024',
    '-master.electionTimeout=1s', // single master: after a restart the default 10 s raft election delays startup ~20 s
    `-volume.port=${p('volume')}`,
    `-volume.port.grpc=${p('volumeGrpc')}`,
    '-volume.max=100',
    '-volume.preStopSeconds=0',
    '-filer',
    `-filer.port=${p('filer')}`,
    `-filer.port.grpc=${p('filerGrpc')}`,
    '-s3',
    `-s3.port=${p('s3')}`,
    `-s3.port.grpc=${p('s3Grpc')}`,
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    `-s3.config=${s3ConfigFile}`,
  ];
}

/** argv and env of `minio server` on 127.0.0.1 with data in `<stateDir>/minio`. */
export function minioCommand(
  stateDir: string,
  ports: Record<string, number>,
  accessKey: string,
  secretKey: string,
): { args: string[]; env: Record<string, string> } {
  const dataDir = path.join(stateDir, 'minio');
  fs.mkdirSync(dataDir, { recursive: true });
  return {
    args: ['server', dataDir, '--quiet', '--address', `127.0.0.1:${ports.s3}`, '--console-address', `127.0.0.1:${ports.console}`],
    env: { MINIO_ROOT_USER: accessKey, MINIO_ROOT_PASSWORD: secretKey },
  };
}

/** A `minio` client for an endpoint (region defaults to us-east-1). */
export function s3Client(s3: S3Endpoint): Minio.Client {
  const { Client } = require('minio') as typeof import('minio'); // lazy: every CLI start loads this file
  return new Client({
    endPoint: s3.endPoint,
    port: s3.port,
    useSSL: s3.useSSL,
    accessKey: s3.accessKey,
    secretKey: s3.secretKey,
    region: s3.region ?? 'us-east-1',
    sessionToken: s3.sessionToken,
  });
}

/** Key of the small object the health probe writes and reads back. */
export const HEALTH_KEY = '.starpo-health';

/**
 * One health probe: creates the bucket when missing, then writes and reads back HEALTH_KEY. Resolves to null when healthy,
 * else a one-line reason. Idempotent.
 */
export async function probeS3(s3: S3Endpoint): Promise<string | null> {
  const client = s3Client(s3);
  try {
    if (!(await client.bucketExists(s3.bucket))) {
      try {
        await client.makeBucket(s3.bucket, s3.region ?? 'us-east-1');
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code !== 'BucketAlreadyOwnedByYou' && code !== 'BucketAlreadyExists') throw err;
      }
    }
    // A write and a read back: listing alone passes before SeaweedFS's volumes are registered.
    const body = Buffer.from(`starpo health ${new Date().toISOString()}`);
    await client.putObject(s3.bucket, HEALTH_KEY, body, body.length);
    const chunks: Buffer[] = [];
    for await (const chunk of await client.getObject(s3.bucket, HEALTH_KEY)) chunks.push(chunk as Buffer);
    if (!Buffer.concat(chunks).equals(body)) return `S3 at ${s3.endPoint}:${s3.port} returned different bytes for ${HEALTH_KEY}`;
    return null;
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return `S3 at ${s3.endPoint}:${s3.port} not ready: ${e.code ?? ''} ${(e.message ?? String(err)).split('\n')[0]}`.trim();
  }
}

/**
 * Removes the unix sockets `weed server` leaves in /tmp (`seaweedfs-<role>[-grpc]-<port>.sock`) after a
 * SIGKILL. Only call once the process is gone. Never throws.
 */
export function removeWeedSockets(ports: Record<string, number>): void {
  const dir = os.tmpdir();
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  const wanted = new Set(Object.values(ports).map(String));
  for (const name of names) {
    const m = /^seaweedfs-[a-z0-9-]+-(\d+)\.sock$/.exec(name);
    if (m && wanted.has(m[1] as string)) fs.rmSync(path.join(dir, name), { force: true });
  }
}

/** The S3 endpoint described by `state.s3` (loopback, plain http). */
export function s3EndpointOf(s3: NonNullable<InfraState['s3']>): S3Endpoint {
  const port = s3.ports.s3;
  if (port === undefined) throw new Error('infra state has no s3 port');
  return {
    endPoint: '127.0.0.1',
    port,
    useSSL: false,
    accessKey: s3.accessKey,
    secretKey: s3.secretKey,
    bucket: s3.bucket,
    region: s3.region,
  };
}

/**
 * Makes sure a healthy S3 server runs with the bucket created; mutates `state.s3`. Keys are generated
 * once and kept in state, so data written earlier stays readable.
 * @returns the record of a process started by this call, or null when a running one was reused.
 * @throws InfraUnavailableError (no binary), InfraStartError (not healthy in 60 s), Error (explicit port in use).
 */
export async function ensureS3(state: InfraState, ctx: StartContext): Promise<ProcessRecord | null> {
  const running = state.s3?.process;
  if (state.s3 && running && isAlive(running)) {
    const endpoint = s3EndpointOf(state.s3);
    await waitHealthy(`S3 server (${state.s3.kind})`, running, () => probeS3(endpoint));
    ctx.log(`S3 server (${state.s3.kind}) already running (pid ${running.pid}) at http://127.0.0.1:${endpoint.port}`);
    for (const p of Object.values(state.s3.ports)) ctx.taken.add(p);
    return null;
  }
  const minio = findMinio();
  const kind = minio ? 'minio' : 'seaweedfs';
  const binary = minio ?? (await ensureBinary(WEED_BINARY, ctx.cacheDir, ctx.log));
  const prev = state.s3?.kind === kind ? state.s3.ports : {};
  const ports: Record<string, number> = {};
  for (const name of kind === 'minio' ? MINIO_PORT_NAMES : WEED_PORT_NAMES) {
    const isApi = name === 's3';
    ports[name] = await pickPort(`S3 ${name}`, isApi ? ctx.opts.s3Port : undefined, prev[name] ?? (isApi ? 9000 : undefined), ctx.taken);
  }
  const accessKey = state.s3?.accessKey ?? 'starpo';
  const secretKey = state.s3?.secretKey ?? `starpo-${randomBytes(12).toString('hex')}`;
  const logFile = path.join(ctx.stateDir, `${kind}.log`);
  let args: string[];
  let env: Record<string, string> = {};
  if (kind === 'minio') ({ args, env } = minioCommand(ctx.stateDir, ports, accessKey, secretKey));
  else args = weedArgs(ctx.stateDir, ports, writeWeedS3Config(ctx.stateDir, accessKey, secretKey));
  const t0 = Date.now();
  ctx.log(`starting S3 server (${kind}) on http://127.0.0.1:${ports.s3}, log ${logFile}`);
  const child = spawnDetached(binary, args, { logFile, cwd: ctx.stateDir, env });
  const rec: ProcessRecord = { pid: child.pid, binary, port: ports.s3 ?? 0, logFile, startedAt: new Date().toISOString() };
  state.s3 = { kind, ports, accessKey, secretKey, bucket: 'starpo', region: 'us-east-1', process: rec };
  ctx.save();
  const endpoint = s3EndpointOf(state.s3);
  await waitHealthy(`S3 server (${kind})`, rec, () => probeS3(endpoint));
  ctx.log(`S3 server (${kind}) healthy in ${((Date.now() - t0) / 1000).toFixed(1)} s (pid ${rec.pid}), bucket ${endpoint.bucket}`);
  return rec;
}
