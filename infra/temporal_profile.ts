/**
 * Which Temporal cluster to use and how to authenticate to it, read the way the `temporal` CLI reads it
 * (@temporalio/envconfig): a TOML profile (file TEMPORAL_CONFIG_FILE, default
 * ~/.config/temporalio/temporal.toml; profile TEMPORAL_PROFILE or `--profile`, default `default`), each
 * field overridden by TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_* and
 * TEMPORAL_GRPC_META_*. Secrets (the API key, a client key) stay in the returned options: messages
 * here name files, variables and profiles, never values.
 */
import * as fs from 'node:fs';
import type { ConnectionOptions } from '@temporalio/client';
import { type ClientConfigProfile, loadClientConfigProfile, toClientOptions } from '@temporalio/envconfig';
import { InfraConfigError } from './errors';
import type { InfraEndpoints, TemporalAuth } from './types';

/** The Temporal part of a profile: address and namespace when given, the authentication, and where the address came from. */
export interface TemporalTarget {
  address?: string;
  namespace?: string;
  auth?: TemporalAuth;
  /** Where `address` was read, for messages: `TEMPORAL_ADDRESS` or `profile "x" of <file>`. */
  from: string;
}

/** The profile file in use, for messages. */
function configFile(env: NodeJS.ProcessEnv): string {
  return env.TEMPORAL_CONFIG_FILE ?? '~/.config/temporalio/temporal.toml';
}

/** The first line of an error message: TOML parse errors go on with the offending line, which may hold a key. */
function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0];
}

/**
 * Reads the profile and the TEMPORAL_* variables of `env`.
 * @throws InfraConfigError naming the file, profile or variable: TEMPORAL_CONFIG_FILE missing or a folder,
 *   a TOML error (line and column only), an unknown profile, an unreadable TLS file
 */
export function temporalTarget(env: NodeJS.ProcessEnv = process.env): TemporalTarget {
  const file = env.TEMPORAL_CONFIG_FILE;
  if (file !== undefined && !fs.statSync(file, { throwIfNoEntry: false })?.isFile()) {
    throw new InfraConfigError(`TEMPORAL_CONFIG_FILE=${JSON.stringify(file)} is not a file; point it at a temporal.toml profile file`);
  }
  const name = env.TEMPORAL_PROFILE?.trim() || undefined;
  const at = `profile ${JSON.stringify(name ?? 'default')} of ${configFile(env)}`;
  let profile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({ profile: name, overrideEnvVars: env as Record<string, string> });
  } catch (err) {
    const where = (err as { line?: number; column?: number }).line;
    const pos = where === undefined ? '' : ` (line ${where}, column ${(err as { column?: number }).column})`;
    throw new InfraConfigError(`cannot read Temporal ${at}${pos}: ${firstLine(err)}`);
  }
  let options: ConnectionOptions;
  try {
    options = toClientOptions(profile).connectionOptions as ConnectionOptions;
  } catch (err) {
    const path = (err as { path?: string }).path;
    throw new InfraConfigError(`cannot read a TLS file of Temporal ${at}${path ? ` (${path})` : ''}: ${firstLine(err)}`);
  }
  const auth: TemporalAuth = {};
  if (options.apiKey !== undefined) auth.apiKey = options.apiKey as string;
  if (options.tls !== undefined && options.tls !== null) auth.tls = options.tls;
  if (options.metadata && Object.keys(options.metadata).length > 0) auth.metadata = options.metadata as Record<string, string>;
  return {
    address: profile.address?.trim() || undefined,
    namespace: profile.namespace?.trim() || undefined,
    auth: Object.keys(auth).length > 0 ? auth : undefined,
    from: env.TEMPORAL_ADDRESS?.trim() ? 'TEMPORAL_ADDRESS' : at,
  };
}

/**
 * The options of `Connection.connect` (client) and `NativeConnection.connect` (worker) for the endpoints:
 * address, TLS (server CA, client certificate and key, server name), API key and gRPC metadata.
 */
export function temporalConnectOptions(e: InfraEndpoints): { address: string } & TemporalAuth {
  return { address: e.temporalAddress, ...e.temporalAuth };
}
