/**
 * Backend names and which one a process asks for (docs/backends.md). No tfjs import, so the
 * CLI can validate `--backend` and report choices without loading a backend.
 */
import * as fs from 'node:fs';
import { inspectNativeBuild, NATIVE_CPU, NATIVE_GPU } from './native_build';

/** Canonical backend names accepted by initBackend, STARPO_BACKEND and `--backend`. */
export const BACKEND_NAMES = ['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

/**
 * The backend of a process that has no role and asks for nothing (tests, benches, `starpo eval`'s helpers):
 * wasm, which needs nothing installed.
 */
export const DEFAULT_BACKEND: BackendName = 'wasm';

/** The roles that compute tensors (the control role runs workflows only). */
export type ComputeRole = 'rollout' | 'update';

/** What a host offers the default choice: the native builds in the cache, and whether an NVIDIA driver is loaded. */
export interface HostBackends {
  tensorflow: boolean;
  tensorflowGpu: boolean;
  nvidiaDriver: boolean;
}

/**
 * Models up to this many parameters generate faster on wasm than on native TensorFlow on a CPU: their decode
 * steps are many small ops, and a native op costs more to dispatch than a wasm one. Larger models generate
 * faster on native, and every model updates faster there (bench/backend_throughput.ts, docs/backends.md).
 */
export const WASM_ROLLOUT_MAX_PARAMS = 1_000_000;

/**
 * The backend a worker role uses when neither STARPO_BACKEND nor `--backend` names one: the GPU build when it
 * is installed and a driver is loaded; else wasm for the rollouts of a model known to be small (`modelParams`
 * <= WASM_ROLLOUT_MAX_PARAMS; `starpo train` knows the run's model when it starts workers, a standalone
 * worker does not); else a native build on CPU when one is installed; else wasm.
 */
export function defaultBackend(role: ComputeRole, host: HostBackends, modelParams?: number): BackendName {
  if (host.tensorflowGpu && host.nvidiaDriver) return 'tensorflow-gpu';
  if (role === 'rollout' && modelParams !== undefined && modelParams <= WASM_ROLLOUT_MAX_PARAMS) return 'wasm';
  if (host.tensorflow) return 'tensorflow';
  return host.tensorflowGpu ? 'tensorflow-gpu' : 'wasm';
}

/**
 * This host's offer, read without loading anything: the builds in the cache (checked by size, as
 * inspectNativeBuild does) and the NVIDIA kernel driver's proc file.
 */
export function hostBackends(): HostBackends {
  return {
    tensorflow: inspectNativeBuild(NATIVE_CPU).state === 'installed',
    tensorflowGpu: inspectNativeBuild(NATIVE_GPU).state === 'installed',
    nvidiaDriver: fs.existsSync('/proc/driver/nvidia/version'),
  };
}

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
