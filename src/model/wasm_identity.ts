/**
 * A zero-copy Identity kernel for the wasm backend.
 *
 * tfjs-core's engine clones (kernel `Identity`) every tensor it saves for the backward pass, and tfjs-backend-wasm
 * 4.22's Identity copies the whole buffer, so autodiff copied e.g. every [B*KVH, G*L, L] attention score tensor a
 * few times per layer (about 6% of an update's time on the tiny model, bench/update_breakdown.ts). Tensors are
 * immutable in tfjs (a Variable's assign swaps its dataId, no kernel writes into its inputs), so the clone can share
 * the input's memory with a reference count, as the wasm Reshape kernel and the cpu backend's Identity already do.
 */
import * as tf from '@tensorflow/tfjs';

interface RefCountingBackend {
  incRef(dataId: tf.DataId): void;
}

function identity(args: { inputs: tf.NamedTensorInfoMap; backend: unknown }): tf.TensorInfo {
  const x = args.inputs.x as tf.TensorInfo;
  (args.backend as RefCountingBackend).incRef(x.dataId);
  return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
}

let installed = false;

/** Replaces the wasm backend's Identity kernel by the zero-copy one (idempotent; call after the backend is registered). */
export function installZeroCopyIdentity(): void {
  if (installed) return;
  installed = true;
  tf.unregisterKernel('Identity', 'wasm');
  tf.registerKernel({ kernelName: 'Identity', backendName: 'wasm', kernelFunc: identity as unknown as tf.KernelFunc });
}
