/**
 * Bringing the S3 server (MinIO or SeaweedFS) up, or reusing the one recorded in state.
 */
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { WEED_BINARY } from './binaries';
import { ensureBinary } from './install';
import { pickPort } from './ports';
import { isAlive, spawnDetached, waitHealthy } from './process';
import { findMinio, minioCommand, MINIO_PORT_NAMES, probeS3, weedArgs, WEED_PORT_NAMES, writeWeedS3Config } from './s3_server';
import type { StartContext } from './start_temporal';
import type { InfraState } from './state';
import type { ProcessRecord, S3Endpoint } from './types';

/** The S3 endpoint described by `state.s3` (loopback, plain http). */
export function s3EndpointOf(s3: NonNullable<InfraState['s3']>): S3Endpoint {
  const port = s3.ports.s3;
  if (port === undefined) throw new Error('infra state has no s3 port');
  return { endPoint: '127.0.0.1', port, useSSL: false, accessKey: s3.accessKey, secretKey: s3.secretKey, bucket: s3.bucket, region: s3.region };
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
