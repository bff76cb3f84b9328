/**
 * TensorFlow.js backend selection (DESIGN.md, "Workers and compute").
 *
 * Order: `@tensorflow/tfjs-node-gpu` (GPU hosts), `@tensorflow/tfjs-node`, `wasm` (the default on these
 * machines: ~20 GFLOP/s for a 256^3 matmul), then the pure-JS `cpu` backend (~1 GFLOP/s). The native
 * packages are loaded dynamically only when `require.resolve` finds them, so they are never dependencies.
 * The env var STARPO_BACKEND (`tensorflow-gpu` | `tensorflow` | `wasm` | `cpu`, or the package names
 * `tfjs-node-gpu` / `tfjs-node`) overrides the `prefer` argument.
 */
import * as tf from '@tensorflow/tfjs';
import { installZeroCopyIdentity } from './wasm_identity';

let initialized: Promise<string> | null = null;
let initializedFor: string | undefined;

/** Canonical backend names accepted by initBackend / STARPO_BACKEND. */
export const BACKEND_NAMES = ['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu'] as const;

function canonical(name: string): string {
  const n = name.trim().toLowerCase();
  if (n === 'tfjs-node-gpu' || n === 'node-gpu' || n === 'gpu' || n === 'tensorflow-gpu') return 'tensorflow-gpu';
  if (n === 'tfjs-node' || n === 'node' || n === 'tensorflow') return 'tensorflow';
  if (n === 'wasm' || n === 'cpu') return n;
  throw new Error(
    `initBackend: backend "${name}" is not known; allowed: ${BACKEND_NAMES.join(', ')} (or tfjs-node-gpu, tfjs-node)`,
  );
}

function tryRequire(pkg: string): boolean {
  try {
    require.resolve(pkg);
  } catch {
    return false;
  }
  try {
    // Dynamic require: registers the 'tensorflow' backend with the shared tfjs-core engine.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require(pkg);
    return true;
  } catch {
    return false;
  }
}

async function trySet(name: string): Promise<boolean> {
  if (name === 'tensorflow-gpu') {
    if (!tryRequire('@tensorflow/tfjs-node-gpu')) return false;
    return tf.setBackend('tensorflow');
  }
  if (name === 'tensorflow') {
    if (!tryRequire('@tensorflow/tfjs-node')) return false;
    return tf.setBackend('tensorflow');
  }
  if (name === 'wasm') {
    try {
      // Side-effect import registers the wasm backend.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      require('@tensorflow/tfjs-backend-wasm');
      installZeroCopyIdentity();
      return await tf.setBackend('wasm');
    } catch {
      return false;
    }
  }
  return tf.setBackend('cpu');
}

async function init(prefer: string | undefined): Promise<string> {
  const order = ['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu'];
  if (prefer !== undefined && prefer !== '') {
    const p = canonical(prefer);
    if (await trySet(p)) {
      await tf.ready();
      return tf.getBackend();
    }
    throw new Error(`initBackend: requested backend "${prefer}" could not be initialized (package missing or init failed)`);
  }
  for (const name of order) {
    if (await trySet(name)) {
      await tf.ready();
      return tf.getBackend();
    }
  }
  throw new Error('initBackend: no tfjs backend could be initialized (tried tfjs-node-gpu, tfjs-node, wasm, cpu)');
}

/**
 * Selects and initializes the tfjs backend. Idempotent: later calls return the first call's result
 * (a later call asking for a different backend re-selects it).
 *
 * @param prefer optional backend ('tensorflow-gpu' | 'tensorflow' | 'wasm' | 'cpu'); STARPO_BACKEND wins.
 * @returns the active tfjs backend name (`tf.getBackend()`), e.g. 'wasm'.
 * @throws Error when a requested backend name is unknown or cannot be initialized.
 */
export function initBackend(prefer?: string): Promise<string> {
  const want = process.env.STARPO_BACKEND || prefer || undefined;
  if (initialized && initializedFor === want) return initialized;
  initializedFor = want;
  initialized = init(want);
  return initialized;
}
