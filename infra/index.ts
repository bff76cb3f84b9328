/**
 * Local infrastructure for starpo: the Temporal dev server and an S3 server on 127.0.0.1, installed
 * into a cache outside the repo and started with state under `<repo>/.starpo/infra`; or external servers
 * from environment variables (DESIGN.md, "Infra on a developer or CI machine").
 */
export type { InfraEndpoints, InfraOptions, S3Endpoint } from './types';
export { SEARCH_ATTRIBUTES, type SearchAttributeType } from './search_attributes';
export { endpointsFromEnv } from './env';
export { infraUp, infraDown, infraStatus, type InfraProcessStatus } from './lifecycle';
export { InfraUnavailableError, InfraStartError, InfraConfigError } from './errors';
export { resolveStateDir, resolveCacheDir } from './paths';
