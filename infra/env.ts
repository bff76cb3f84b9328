/**
 * Servers named by environment variables, both ways: external servers read from them (when set, infraUp
 * starts nothing; production points at any MinIO/S3 endpoint, docs/operating.md, "Other servers and more
 * hosts"), and the variables that point a child process at the same servers.
 */
import { InfraConfigError } from './errors';
import type { InfraEndpoints, S3Endpoint } from './types';

/**
 * Reads TEMPORAL_ADDRESS (host:port) and S3_ENDPOINT (URL like http://127.0.0.1:9000) with S3_ACCESS_KEY,
 * S3_SECRET_KEY, S3_BUCKET (default `starpo`), S3_REGION (optional), TEMPORAL_NAMESPACE (default `default`),
 * TEMPORAL_UI_URL (optional). Returns null when neither TEMPORAL_ADDRESS nor S3_ENDPOINT is set.
 * @throws InfraConfigError when only one of the two is set, a key is missing, or a value is malformed.
 */
export function endpointsFromEnv(env: NodeJS.ProcessEnv = process.env): InfraEndpoints | null {
  const temporal = env.TEMPORAL_ADDRESS?.trim();
  const s3 = env.S3_ENDPOINT?.trim();
  if (!temporal && !s3) return null;
  if (!temporal)
    throw new InfraConfigError(`S3_ENDPOINT is set (${s3}) but TEMPORAL_ADDRESS is not; set both (TEMPORAL_ADDRESS=host:port) or neither`);
  if (!s3)
    throw new InfraConfigError(
      `TEMPORAL_ADDRESS is set (${temporal}) but S3_ENDPOINT is not; set both (S3_ENDPOINT=http://host:port) or neither`,
    );
  if (!/^[^\s:/]+:\d{1,5}$/.test(temporal)) {
    throw new InfraConfigError(`TEMPORAL_ADDRESS=${JSON.stringify(temporal)} is not host:port (e.g. 127.0.0.1:7233)`);
  }
  let url: URL;
  try {
    url = new URL(s3);
  } catch {
    throw new InfraConfigError(`S3_ENDPOINT=${JSON.stringify(s3)} is not a URL; allowed: http://host:port or https://host:port`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InfraConfigError(`S3_ENDPOINT=${JSON.stringify(s3)} has scheme ${url.protocol}; allowed: http or https`);
  }
  const accessKey = env.S3_ACCESS_KEY;
  const secretKey = env.S3_SECRET_KEY;
  if (!accessKey) throw new InfraConfigError('S3_ENDPOINT is set but S3_ACCESS_KEY is empty; set the access key of the S3 server');
  if (!secretKey) throw new InfraConfigError('S3_ENDPOINT is set but S3_SECRET_KEY is empty; set the secret key of the S3 server');
  const useSSL = url.protocol === 'https:';
  return {
    temporalAddress: temporal,
    temporalNamespace: env.TEMPORAL_NAMESPACE?.trim() || 'default',
    temporalUiUrl: env.TEMPORAL_UI_URL?.trim() || undefined,
    s3: {
      endPoint: url.hostname,
      port: url.port ? Number(url.port) : useSSL ? 443 : 80,
      useSSL,
      accessKey,
      secretKey,
      bucket: env.S3_BUCKET?.trim() || 'starpo',
      region: env.S3_REGION?.trim() || undefined,
    },
    managed: false,
  };
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
