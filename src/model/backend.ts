/**
 * TensorFlow.js backend selection (DESIGN.md, "Workers and compute").
 *
 * Default: `wasm` (~20 GFLOP/s for a 256^3 matmul), then the pure-JS `cpu` backend (~1 GFLOP/s) if wasm
 * cannot start. The native backends are used only when asked for (STARPO_BACKEND, `--backend`, or the
 * `prefer` argument; backend_choice.ts): `tensorflow` loads the build `starpo backend install` keeps in the
 * cache (native_backend.ts; never an `@tensorflow/tfjs-node` in node_modules, whose install script fetches an
 * old libtensorflow); `tensorflow-gpu` loads `@tensorflow/tfjs-node-gpu` from node_modules. The two native
 * packages ship libraries of the same names, so a process that loaded one refuses the other.
 */
import * as tf from '@tensorflow/tfjs';
import { DEFAULT_BACKEND, requestedBackend, type BackendName } from './backend_choice';
import { loadNativeCpu } from './native_backend';
import { NativeBackendError } from './native_build';
import { installZeroCopyIdentity } from './wasm_identity';

let initialized: Promise<string> | null = null;
let initializedFor: BackendName | undefined;
/** The native package this process loaded, if any. */
let nativeLoaded: 'tfjs-node' | 'tfjs-node-gpu' | null = null;

/** true when `pkg` resolves from this project. */
function resolvable(pkg: string): boolean {
  try {
    require.resolve(pkg);
    return true;
  } catch {
    return false;
  }
}

/** Loads one native package (registering the 'tensorflow' backend), refusing the other one. */
function loadNative(which: 'tfjs-node' | 'tfjs-node-gpu'): void {
  if (nativeLoaded === which) return;
  if (nativeLoaded) throw new NativeBackendError(`@tensorflow/${nativeLoaded} is loaded in this process; @tensorflow/${which} cannot be loaded beside it (same library names)`);
  if (which === 'tfjs-node-gpu') {
    if (!resolvable('@tensorflow/tfjs-node-gpu')) throw new NativeBackendError('backend tensorflow-gpu was requested but @tensorflow/tfjs-node-gpu is not installed');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('@tensorflow/tfjs-node-gpu');
  } else {
    loadNativeCpu(); // throws saying how to install or repair the build
  }
  nativeLoaded = which;
}

/** Makes `name` the active backend. @throws Error saying why it cannot be used */
async function activate(name: BackendName): Promise<void> {
  if (name === 'tensorflow' || name === 'tensorflow-gpu') loadNative(name === 'tensorflow' ? 'tfjs-node' : 'tfjs-node-gpu');
  if (name === 'wasm') {
    // Side-effect import registers the wasm backend.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('@tensorflow/tfjs-backend-wasm');
    installZeroCopyIdentity();
  }
  const tfName = name === 'tensorflow-gpu' ? 'tensorflow' : name;
  if (!(await tf.setBackend(tfName))) throw new Error(`initBackend: the ${tfName} backend failed to initialize`);
  await tf.ready();
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
  return { backend: nativeLoaded === 'tfjs-node-gpu' ? 'tensorflow-gpu' : 'tensorflow', device: onGpu ? 'GPU' : 'CPU' };
}
