/**
 * Starts the tfjs backend a process asks for (backend_choice.ts: STARPO_BACKEND, `--backend` or the caller's
 * `prefer`, e.g. a worker role's default); without one `wasm`, then the pure-JS `cpu` if wasm cannot start.
 * `tensorflow` and `tensorflow-gpu` load the builds `starpo backend install [--gpu]` keeps in the cache
 * (native_backend.ts), never a tfjs-node in node_modules, whose install scripts fetch an old libtensorflow.
 */
import * as tf from '@tensorflow/tfjs';
import { type BackendName, DEFAULT_BACKEND, requestedBackend } from './backend_choice';
import { installZeroCopyIdentity } from './kernels';
import { loadNativeBuild, type NativeLoad } from './native_backend';
import { NativeBackendError, type NativeVariant, variantOf } from './native_build';
import { guardWasmAllocations } from './out_of_memory';

let initialized: Promise<string> | null = null;
let initializedFor: BackendName | undefined;
/** The native build this process loaded, if any. */
let nativeLoaded: NativeVariant | null = null;

/**
 * The line saying the GPU build computes on the CPU, and why as far as the process can tell: TensorFlow
 * opens the host's CUDA driver (libcuda.so.1) itself, so a driver it did not map was not found.
 */
export function noGpuLine(load: Pick<NativeLoad, 'tfVersion' | 'cudaDriver'>, env: NodeJS.ProcessEnv = process.env): string {
  const visible = env.CUDA_VISIBLE_DEVICES === undefined ? '' : `, CUDA_VISIBLE_DEVICES=${JSON.stringify(env.CUDA_VISIBLE_DEVICES)}`;
  const why = load.cudaDriver
    ? `the CUDA driver loaded but no device is usable${visible}`
    : `no CUDA driver: libcuda.so.1 not found${visible}`;
  return `tensorflow-gpu: TensorFlow ${load.tfVersion} sees no GPU (${why}); computing on CPU`;
}

/** Loads one native build (registering the 'tensorflow' backend), refusing the other one (same library names). */
function loadNative(v: NativeVariant): void {
  if (nativeLoaded === v) return;
  if (nativeLoaded)
    throw new NativeBackendError(
      `${nativeLoaded.tfjsNode.name} is loaded in this process; ${v.tfjsNode.name} cannot be loaded beside it (same library names)`,
    );
  const load = loadNativeBuild(v); // throws saying how to install or repair the build
  nativeLoaded = v;
  if (v.variant === 'gpu' && !load.gpu) process.stderr.write(`${noGpuLine(load)}\n`);
}

/** Makes `name` the active backend. @throws Error saying why it cannot be used */
async function activate(name: BackendName): Promise<void> {
  if (name === 'tensorflow' || name === 'tensorflow-gpu') loadNative(variantOf(name));
  if (name === 'wasm') {
    // Side-effect import registers the wasm backend.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('@tensorflow/tfjs-backend-wasm');
    installZeroCopyIdentity();
  }
  const tfName = name === 'tensorflow-gpu' ? 'tensorflow' : name;
  if (!(await tf.setBackend(tfName))) throw new Error(`initBackend: the ${tfName} backend failed to initialize`);
  await tf.ready();
  if (name === 'wasm') guardWasmAllocations();
}

async function init(want: BackendName | undefined): Promise<string> {
  if (want) {
    await activate(want);
    return tf.getBackend();
  }
  try {
    await activate(DEFAULT_BACKEND);
  } catch {
    await activate('cpu');
  }
  return tf.getBackend();
}

/**
 * Selects and initializes the tfjs backend. Idempotent: later calls return the first call's result
 * (a later call asking for a different backend re-selects it).
 *
 * @param prefer optional backend ('tensorflow-gpu' | 'tensorflow' | 'wasm' | 'cpu'); STARPO_BACKEND wins.
 * @returns the active tfjs backend name (`tf.getBackend()`), e.g. 'wasm' (both native backends are 'tensorflow').
 * @throws Error when a requested backend name is unknown or cannot be initialized (NativeBackendError saying
 *   how to install a missing native build).
 */
export function initBackend(prefer?: string): Promise<string> {
  const want = requestedBackend(process.env, prefer);
  if (initialized && initializedFor === want) return initialized;
  initializedFor = want;
  initialized = init(want);
  return initialized;
}

/** The backend computing in this process and the device it computes on. */
export interface BackendInfo {
  backend: BackendName;
  /** 'GPU' when TensorFlow placed its ops on a GPU, else 'CPU' (wasm and cpu always compute on the CPU). */
  device: string;
}

/**
 * The active backend (as initBackend left it) and its device, from what tfjs-node's binding says:
 * its backend object records `isUsingGpuDevice` when it is created (TensorFlow found a GPU device or not).
 * @throws Error when initBackend has not made a backend active yet
 */
export function backendInfo(): BackendInfo {
  const active = tf.engine().backendName;
  if (!initialized || !active) throw new Error('backendInfo: no backend is active yet; await initBackend() first');
  if (active !== 'tensorflow') return { backend: active as BackendName, device: 'CPU' };
  const onGpu = (tf.backend() as unknown as { isUsingGpuDevice?: boolean }).isUsingGpuDevice === true;
  return { backend: nativeLoaded?.backend ?? 'tensorflow', device: onGpu ? 'GPU' : 'CPU' };
}
