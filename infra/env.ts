/**
 * Servers named by environment variables, both ways: external servers read from them (when set, infraUp
 * starts nothing; production points at any MinIO/S3 endpoint, docs/operating.md, "Other servers and more
 * hosts"), and the variables that point a child process at the same servers.
 */
import { InfraConfigError } from './errors';
import { temporalTarget } from './temporal_profile';
import type { InfraEndpoints, S3Endpoint } from './types';

/**
 * Reads the Temporal cluster from the profile and TEMPORAL_* variables (temporal_profile.ts: address,
 * namespace default `default`, TLS, API key) and S3_ENDPOINT (URL like http://127.0.0.1:9000 or
 * https://s3.eu-west-1.amazonaws.com) with S3_ACCESS_KEY, S3_SECRET_KEY, S3_SESSION_TOKEN (optional),
 * S3_BUCKET (default `starpo`), S3_REGION (optional), TEMPORAL_UI_URL (optional). Returns null when
 * neither a Temporal address nor S3_ENDPOINT is set (the local servers are used then).
 * @throws InfraConfigError when only one of the two is set, a key is missing, or a value is malformed
 *   (naming the variable or profile, never a secret's value)
 */
export function endpointsFromEnv(env: NodeJS.ProcessEnv = process.env): InfraEndpoints | null {
  const target = temporalTarget(env);
  const temporal = target.address;
  const s3 = env.S3_ENDPOINT?.trim();
  if (!temporal && !s3) {
    if (target.auth)
      throw new InfraConfigError(
        `Temporal TLS or an API key is set (TEMPORAL_API_KEY, TEMPORAL_TLS* or ${target.from}) but no address; set TEMPORAL_ADDRESS=host:port or the profile's address`,
      );
    return null;
  }
  if (!temporal)
    throw new InfraConfigError(
      `S3_ENDPOINT is set (${s3}) but TEMPORAL_ADDRESS is not (nor a profile's address); set both (TEMPORAL_ADDRESS=host:port, or --profile) or neither`,
    );
  if (!s3)
    throw new InfraConfigError(
      `the Temporal address ${temporal} is set (${target.from}) but S3_ENDPOINT is not; set both (S3_ENDPOINT=https://host:port) or neither`,
    );
  if (!/^[^\s:/]+:\d{1,5}$/.test(temporal)) {
    throw new InfraConfigError(`Temporal address ${JSON.stringify(temporal)} (${target.from}) is not host:port (e.g. 127.0.0.1:7233)`);
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
  const endpoints: InfraEndpoints = {
    temporalAddress: temporal,
    temporalNamespace: target.namespace ?? 'default',
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
  if (env.S3_SESSION_TOKEN) endpoints.s3.sessionToken = env.S3_SESSION_TOKEN;
  if (target.auth) endpoints.temporalAuth = target.auth;
  return endpoints;
}

/**
 * The environment variables that point a child process (a worker) at the same servers. Temporal's TLS and
 * API key are not among them: the child inherits the variables and profile they came from (`--profile`
 * sets TEMPORAL_PROFILE), so no secret goes on a command line.
 */
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
  if (e.s3.sessionToken) env.S3_SESSION_TOKEN = e.s3.sessionToken;
  if (e.temporalUiUrl) env.TEMPORAL_UI_URL = e.temporalUiUrl;
  return env;
}

/** The S3 endpoint as a URL, e.g. `http://127.0.0.1:9000` (the form S3_ENDPOINT takes). */
export function s3Url(s3: S3Endpoint): string {
  return `${s3.useSSL ? 'https' : 'http'}://${s3.endPoint}:${s3.port}`;
}
