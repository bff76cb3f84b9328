/**
 * Backend names and which one a process asks for (DESIGN.md, "Workers and compute"). No tfjs import, so the
 * CLI can validate `--backend` and report choices without loading a backend.
 */

/** Canonical backend names accepted by initBackend, STARPO_BACKEND and `--backend`. */
export const BACKEND_NAMES = ['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

/**
 * The backend a process uses when nothing is requested. wasm stays the default on every host until
 * throughput measurements pick native per role: a native build in the cache is used only when asked for.
 */
export const DEFAULT_BACKEND: BackendName = 'wasm';

/** A backend name that is not one of BACKEND_NAMES (the CLI exits 2). */
export class UnknownBackendError extends Error {
  override name = 'UnknownBackendError';
}

/**
 * The canonical name of `name` (also accepts the package names tfjs-node-gpu / tfjs-node).
 * @throws UnknownBackendError naming the value and the allowed names
 */
export function canonicalBackend(name: string): BackendName {
  const n = name.trim().toLowerCase();
  if (n === 'tfjs-node-gpu' || n === 'node-gpu' || n === 'gpu' || n === 'tensorflow-gpu') return 'tensorflow-gpu';
  if (n === 'tfjs-node' || n === 'node' || n === 'tensorflow') return 'tensorflow';
  if (n === 'wasm' || n === 'cpu') return n;
  throw new UnknownBackendError(`backend "${name}" is not known; allowed: ${BACKEND_NAMES.join(', ')} (or tfjs-node-gpu, tfjs-node)`);
}

/**
 * The backend asked for: STARPO_BACKEND (set by `--backend` for the workers a command spawns) wins over
 * `prefer` (a caller's default, e.g. tests pinning wasm); undefined means "the default order".
 */
export function requestedBackend(env: NodeJS.ProcessEnv, prefer?: string): BackendName | undefined {
  if (env.STARPO_BACKEND) {
    try {
      return canonicalBackend(env.STARPO_BACKEND);
    } catch (err) {
      throw new UnknownBackendError(`STARPO_BACKEND: ${(err as Error).message}`);
    }
  }
  return prefer ? canonicalBackend(prefer) : undefined;
}
