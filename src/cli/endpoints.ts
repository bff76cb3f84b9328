/**
 * Where the servers are, for CLI commands: the environment (TEMPORAL_ADDRESS + S3_ENDPOINT, see
 * infra/env.ts), else the local servers `starpo infra up` records (started on demand when asked).
 */
import { endpointsFromEnv } from '../../infra/env';
import { infraStatus, infraUp } from '../../infra';
import type { InfraEndpoints, S3Endpoint } from '../../infra/types';
import { InfraUnavailableError } from '../../infra/errors';

/**
 * Resolves endpoints. With `start`, local servers are installed/started when not running.
 * @throws InfraUnavailableError when nothing is configured, nothing runs and `start` is false
 */
export async function resolveEndpoints(opts: { start: boolean; log?: (line: string) => void }): Promise<InfraEndpoints> {
  const fromEnv = endpointsFromEnv();
  if (fromEnv) return fromEnv;
  if (opts.start) return infraUp({ log: opts.log });
  const status = await infraStatus();
  if (status.running && status.endpoints) return status.endpoints;
  throw new InfraUnavailableError('no servers: the local infra is not running; start it with `starpo infra up`, or point at running servers with TEMPORAL_ADDRESS, S3_ENDPOINT, S3_ACCESS_KEY and S3_SECRET_KEY', { hint: false });
}

/** The environment variables that point a child process (a worker) at the same servers. */
export function endpointsToEnv(e: InfraEndpoints): Record<string, string> {
  const env: Record<string, string> = {
    TEMPORAL_ADDRESS: e.temporalAddress,
    TEMPORAL_NAMESPACE: e.temporalNamespace,
    S3_ENDPOINT: s3Url(e.s3),
    S3_ACCESS_KEY: e.s3.accessKey,
    S3_SECRET_KEY: e.s3.secretKey,
    S3_BUCKET: e.s3.bucket,
  };
  if (e.s3.region) env.S3_REGION = e.s3.region;
  if (e.temporalUiUrl) env.TEMPORAL_UI_URL = e.temporalUiUrl;
  return env;
}

/** The S3 endpoint as a URL, e.g. `http://127.0.0.1:9000` (the form S3_ENDPOINT takes). */
export function s3Url(s3: S3Endpoint): string {
  return `${s3.useSSL ? 'https' : 'http'}://${s3.endPoint}:${s3.port}`;
}
