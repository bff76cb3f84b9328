/**
 * Fast matmuls for the wasm backend, with their own gradients.
 *
 * tfjs-backend-wasm 4.22 (src/cc/batch_mat_mul_impl.cc) sends a BatchMatMul to XNNPACK only when it is a single
 * (batch 1) product with transposeA = transposeB = false; every other case (batched, or a transpose flag, which
 * tfjs's own matMul gradient uses) runs a naive loop, an order of magnitude slower than an explicit transpose plus
 * a plain matmul, and a batched product several times slower than its slices as plain products. Slicing a batch
 * apart is no way out either: the wasm Slice/SplitV/Gather kernels copy the WHOLE input per output (readSync),
 * O(S^2) for S slices.
 *
 * So:
 *  - `linear` issues plain 2-D matmuls with explicit tf.transpose, forward and backward (tf.customGrad);
 *  - `bmm` runs the kernel `StarpoBmm`, registered here for wasm: for each batch slice it registers zero-copy
 *    views (tensor ids pointing into the inputs' and output's wasm heap memory) and calls the backend's own
 *    BatchMatMul entry point on them, which takes the XNNPACK path; its gradient is two more `bmm`s.
 * On other backends (tfjs-node, cpu) both fall back to the ordinary tf.matMul.
 */
import * as tf from '@tensorflow/tfjs';

const BMM = 'StarpoBmm';

/* Minimal view of tfjs-backend-wasm's BackendWasm internals used by the kernel (4.x). */
interface WasmData {
  memoryOffset: number;
}
interface WasmBackendLike {
  dataIdNextNumber: number;
  dataIdMap: { get(dataId: unknown): WasmData };
  makeOutput(shape: number[], dtype: 'float32'): tf.TensorInfo;
  wasm: {
    cwrap(name: string, ret: null, args: string[]): (...a: unknown[]) => void;
    tfjs: { registerTensor(id: number, size: number, offset: number): void; disposeData(id: number): void };
  };
}

let wasmBatchMatMul: ((...a: unknown[]) => void) | null = null;
let wasmBackendFor: unknown = null;

function shapeBytes(s: number[]): Uint8Array {
  return new Uint8Array(new Int32Array(s).buffer);
}

function bmmKernel(args: { inputs: tf.NamedTensorInfoMap; backend: unknown }): tf.TensorInfo {
  const backend = args.backend as WasmBackendLike;
  const a = args.inputs.a as tf.TensorInfo;
  const b = args.inputs.b as tf.TensorInfo;
  if (a.dtype !== 'float32' || b.dtype !== 'float32') throw new Error(`${BMM}: float32 inputs required, got ${a.dtype}, ${b.dtype}`);
  const [S, M, K] = a.shape;
  const [Sb, Kb, N] = b.shape;
  if (S !== Sb || K !== Kb) throw new Error(`${BMM}: shapes [${a.shape}] and [${b.shape}] do not match ([S,M,K] @ [S,K,N])`);
  if (wasmBatchMatMul === null || wasmBackendFor !== backend) {
    wasmBatchMatMul = backend.wasm.cwrap('BatchMatMul', null, [
      'number', 'array', 'number', 'number', 'array', 'number', 'number', 'number', 'number',
    ]);
    wasmBackendFor = backend;
  }
  const out = backend.makeOutput([S, M, N], 'float32');
  const aOff = backend.dataIdMap.get(a.dataId).memoryOffset;
  const bOff = backend.dataIdMap.get(b.dataId).memoryOffset;
  const oOff = backend.dataIdMap.get(out.dataId).memoryOffset;
  const aShape = shapeBytes([1, M, K]);
  const bShape = shapeBytes([1, K, N]);
  const tfjs = backend.wasm.tfjs;
  for (let s = 0; s < S; s++) {
    const ia = backend.dataIdNextNumber++;
    const ib = backend.dataIdNextNumber++;
    const io = backend.dataIdNextNumber++;
    tfjs.registerTensor(ia, M * K, aOff + s * M * K * 4);
    tfjs.registerTensor(ib, K * N, bOff + s * K * N * 4);
    tfjs.registerTensor(io, M * N, oOff + s * M * N * 4);
    try {
      wasmBatchMatMul(ia, aShape, 3, ib, bShape, 3, 0, 0, io);
    } finally {
      // Unregisters the views (and the XNNPACK operator cached on ib); the memory belongs to a, b, out.
      tfjs.disposeData(ia);
      tfjs.disposeData(ib);
      tfjs.disposeData(io);
    }
  }
  return out;
}

let registered = false;
function ensureRegistered(): void {
  if (registered) return;
  registered = true;
  tf.registerKernel({ kernelName: BMM, backendName: 'wasm', kernelFunc: bmmKernel as unknown as tf.KernelFunc });
  tf.registerGradient({
    kernelName: BMM,
    inputsToSave: ['a', 'b'],
    gradFunc: (dy, saved) => {
      const [a, b] = saved as tf.Tensor3D[];
      const d = dy as tf.Tensor3D;
      return {
        a: () => bmm(d, tf.transpose(b, [0, 2, 1])),
        // db = a^T @ dy. When dy is the larger operand (attention scores: dy [G*Lq, Lk] vs a [G*Lq, D]), XNNPACK
        // is slow at a^T @ dy (few output rows, a large right operand); (dy^T @ a)^T costs one transpose of dy
        // and is several times faster.
        b: () => (d.size > a.size ? tf.transpose(bmm(tf.transpose(d, [0, 2, 1]), a), [0, 2, 1]) : bmm(tf.transpose(a, [0, 2, 1]), d)),
      };
    },
  });
}

/** Fewest rows of `a` for which `bmm` uses XNNPACK on wasm (below, its per-slice setup costs more than it saves). */
const BMM_MIN_ROWS = 8;

/**
 * Batched matmul a @ b over a leading batch axis, differentiable (da = dy @ b^T, db = a^T @ dy).
 * On wasm, slices with at least BMM_MIN_ROWS rows run through XNNPACK (StarpoBmm); fewer (e.g. the G query rows
 * of a generation step) use the built-in batched kernel, which is cheaper for them (measured: 64 x [2,16]@[16,500]
 * 3.7 ms built-in vs 7.0 ms XNNPACK; 16 x [100,200]@[200,16] 7.9 ms vs 1.3 ms).
 * @param a float32 [S, M, K]; b float32 [S, K, N] -> float32 [S, M, N]
 */
export function bmm(a: tf.Tensor3D, b: tf.Tensor3D): tf.Tensor3D {
  if (tf.getBackend() !== 'wasm' || a.shape[1] < BMM_MIN_ROWS) return tf.matMul(a, b);
  ensureRegistered();
  return tf.engine().runKernel(BMM, { a, b } as unknown as tf.NamedTensorMap, {}) as tf.Tensor3D;
}

/**
 * Linear layer y = x @ W^T with W in HF layout [out, in] (+ bias), differentiable.
 * On wasm the gradients are dx = dy @ W and dW = transpose(dy) @ x, all plain (XNNPACK) matmuls.
 * @param x float32 [N, in]; w float32 [out, in]; b optional float32 [out] -> float32 [N, out]
 * @param wT optional W^T [in, out] kept by the caller while W is unchanged (WeightTransposes): XNNPACK then
 *   reuses its packed copy instead of packing a fresh transpose every call (most of a generation step's cost)
 */
export function linear(x: tf.Tensor2D, w: tf.Tensor2D, b?: tf.Tensor1D, wT?: tf.Tensor2D): tf.Tensor2D {
  let y: tf.Tensor2D;
  if (tf.getBackend() !== 'wasm') {
    y = tf.matMul(x, w, false, true);
  } else {
    const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      const xi = args[0] as tf.Tensor2D;
      const wi = args[1] as tf.Tensor2D;
      const save = args[2] as tf.GradSaveFunc;
      save([xi, wi]);
      const value = (wT ? tf.matMul(xi, wT) : tf.tidy(() => tf.matMul(xi, tf.transpose(wi)))) as tf.Tensor2D;
      const gradFunc = (dy: tf.Tensor2D, saved: tf.Tensor[]): tf.Tensor[] => {
        const [xs, ws] = saved as tf.Tensor2D[];
        // dW [out, in] = dy^T @ x, or (x^T @ dy)^T when dy [N, out] is the smaller right operand: XNNPACK repacks
        // its right operand on every call (measured, N = 3200: out 64, in 192: 8.2 ms vs 11.1 ms; out 192, in 64:
        // dy^T @ x 7.6 ms vs 10.9 ms).
        const [out, inDim] = ws.shape;
        const dW = tf.tidy(() => (out < inDim ? tf.transpose(tf.matMul(tf.transpose(xs), dy)) : tf.matMul(tf.transpose(dy), xs)));
        return [tf.matMul(dy, ws), dW];
      };
      return { value, gradFunc };
    });
    y = f(x, w) as tf.Tensor2D;
  }
  return b ? tf.add<tf.Tensor2D>(y, b) : y;
}

/** Largest weight (elements) whose transpose `WeightTransposes` keeps: 16 MB of float32, so a large model's copies stay small. */
const KEEP_TRANSPOSE_MAX = 4 * 1024 * 1024;

/**
 * Transposed weights kept across calls, one per weight name, rebuilt when the weight's data changes (a
 * tf.Variable's assign swaps its data), so `linear` on an unchanged weight reuses the same W^T tensor (on wasm,
 * XNNPACK keeps its packed form per tensor). Only on wasm and for weights up to KEEP_TRANSPOSE_MAX elements
 * (wasm memory is at most 4 GB); `dispose` frees them.
 */
export class WeightTransposes {
  private readonly cache = new Map<string, { data: object; wT: tf.Tensor2D }>();

  /** W^T [in, out] of w [out, in] (owned by this cache), or undefined off wasm or for a larger weight. */
  of(name: string, w: tf.Tensor2D): tf.Tensor2D | undefined {
    if (tf.getBackend() !== 'wasm' || w.size > KEEP_TRANSPOSE_MAX) return undefined;
    const data = w.dataId as object;
    const hit = this.cache.get(name);
    if (hit?.data === data) return hit.wT;
    hit?.wT.dispose();
    const wT = tf.keep(tf.transpose(w));
    this.cache.set(name, { data, wT });
    return wT;
  }

  /** Frees every kept transpose. */
  dispose(): void {
    for (const { wT } of this.cache.values()) wT.dispose();
    this.cache.clear();
  }
}
