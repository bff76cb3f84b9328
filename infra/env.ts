/**
 * External servers from environment variables: when set, infraUp starts nothing
 * (DESIGN.md, "Infra on a developer or CI machine": production points at any MinIO/S3 endpoint).
 */
import { InfraConfigError } from './errors';
import type { InfraEndpoints } from './types';

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
  if (!temporal) throw new InfraConfigError(`S3_ENDPOINT is set (${s3}) but TEMPORAL_ADDRESS is not; set both (TEMPORAL_ADDRESS=host:port) or neither`);
  if (!s3) throw new InfraConfigError(`TEMPORAL_ADDRESS is set (${temporal}) but S3_ENDPOINT is not; set both (S3_ENDPOINT=http://host:port) or neither`);
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
