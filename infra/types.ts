/**
 * Shared shapes of the infra module (docs/operating.md, "The local servers").
 * Only plain data lives here so every other infra file can import it without cycles.
 */
import type { TLSConfig } from '@temporalio/client';

/** An S3-compatible endpoint as the `minio` client needs it. `port` is a TCP port; keys are secrets (never put them in Temporal history). */
export interface S3Endpoint {
  /** Host name or IP, without scheme (e.g. `127.0.0.1`). */
  endPoint: string;
  /** TCP port of the S3 API. */
  port: number;
  /** true for https. */
  useSSL: boolean;
  accessKey: string;
  secretKey: string;
  /** Bucket that holds everything (docs/design.md, "The object store"; default `starpo`). */
  bucket: string;
  /** S3 region sent by the client (default `us-east-1`). */
  region?: string;
  /** Session token of temporary credentials (AWS STS); a secret like the keys. */
  sessionToken?: string;
}

/**
 * How to authenticate to a Temporal cluster beyond its address (infra/temporal_profile.ts): TLS (true, or
 * the server CA, server name and a client certificate and key), an API key, gRPC metadata. Secrets: never
 * logged, printed or put in Temporal history.
 */
export interface TemporalAuth {
  tls?: TLSConfig | boolean;
  apiKey?: string;
  metadata?: Record<string, string>;
}

/** Where the Temporal server and the S3 store are, either started by infraUp (managed) or taken from the environment. */
export interface InfraEndpoints {
  /** Temporal frontend gRPC address, `host:port`. */
  temporalAddress: string;
  /** Temporal namespace (default `default`). */
  temporalNamespace: string;
  /** Temporal Web UI base URL, when known. */
  temporalUiUrl?: string;
  /** TLS, API key and metadata of an external cluster; absent for a plain connection (the local dev server). */
  temporalAuth?: TemporalAuth;
  s3: S3Endpoint;
  /** false when the endpoints come from environment variables (nothing was started). */
  managed: boolean;
}

/** Options of infraUp/infraDown/infraStatus. Every field is optional; ports are TCP ports on 127.0.0.1. */
export interface InfraOptions {
  /** Folder for infra.json, logs and server data. Default `<repo>/.starpo/infra`, or STARPO_STATE_DIR. */
  stateDir?: string;
  /** Root of the binary cache. Default `${XDG_CACHE_HOME:-~/.cache}/starpo`, or STARPO_CACHE_DIR; binaries go to `<cacheDir>/bin/<name>-<version>/`. */
  cacheDir?: string;
  /** Receives one human-readable progress line at a time. Default: silent. */
  log?: (line: string) => void;
  /** Temporal frontend gRPC port. Default 7233 when free, else a free port. */
  temporalPort?: number;
  /** Temporal Web UI port. Default 8233 when free, else a free port. */
  uiPort?: number;
  /** S3 API port. Default 9000 when free, else a free port. */
  s3Port?: number;
}

/** A server process infraUp started and recorded in infra.json. */
export interface ProcessRecord {
  /** Process id (also the process group id: servers are spawned detached). */
  pid: number;
  /** Absolute path of the executable, used to recognise the process again (pid reuse). */
  binary: string;
  /** Main TCP port (Temporal gRPC or S3 API). */
  port: number;
  /** Log file of the process (stdout and stderr). */
  logFile: string;
  /** ISO time of the start. */
  startedAt: string;
}
