/**
 * Backend-specific kernels the model calls (qwen2.ts): matmuls, the embedding lookup and rotate_half, each
 * with its own gradient, and a zero-copy Identity. They exist because of tfjs-backend-wasm 4.22's kernels
 * (the reasons are on each function); on the other backends (tensorflow, cpu) they are the plain tf ops.
 */
import * as tf from '@tensorflow/tfjs';

/*
 * Matmuls. tfjs-backend-wasm (src/cc/batch_mat_mul_impl.cc) sends a BatchMatMul to XNNPACK only when it is a
 * single (batch 1) product with transposeA = transposeB = false; every other case (batched, or a transpose flag,
 * which tfjs's own matMul gradient uses) runs a naive loop, much slower than an explicit transpose plus a plain
 * matmul. Slicing a batch apart is no way out: the wasm Slice/SplitV/Gather kernels copy the WHOLE input per
 * output (readSync). So `linear` issues plain 2-D matmuls with explicit transposes, forward and backward; `bmm`
 * runs the kernel `StarpoBmm`, which for each batch slice registers zero-copy views (tensor ids pointing into
 * the inputs' and output's wasm heap memory) and calls the backend's own BatchMatMul on them (the XNNPACK path).
 */
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
      'number',
      'array',
      'number',
      'number',
      'array',
      'number',
      'number',
      'number',
      'number',
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
        // is slow at a^T @ dy (few output rows, a large right operand); (dy^T @ a)^T costs one transpose of dy.
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
 * of a generation step) use the built-in batched kernel, which is cheaper for them.
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
        // its right operand on every call.
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
export const KEEP_TRANSPOSE_MAX = 4 * 1024 * 1024;

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

/**
 * Stacked weights kept across calls, one per name: [W_1; ...; W_n] (and [b_1; ...; b_n]) of linear layers that read
 * the same input, rebuilt when any part's data changes (an optimizer step), so `fusedLinear` runs them as one
 * matmul without concatenating the weights on every call. `dispose` frees them.
 */
export class FusedWeights {
  private readonly cache = new Map<string, { data: object[]; stacked: tf.Tensor2D; bias?: tf.Tensor1D }>();

  /** The stacked weight (and bias) of `parts` under `name` (owned by this cache). */
  of(name: string, ws: tf.Tensor2D[], bs?: tf.Tensor1D[]): { stacked: tf.Tensor2D; bias?: tf.Tensor1D } {
    const data = [...ws, ...(bs ?? [])].map((t) => t.dataId as object);
    const hit = this.cache.get(name);
    if (hit && hit.data.length === data.length && hit.data.every((d, i) => d === data[i])) return hit;
    if (hit) {
      hit.stacked.dispose();
      hit.bias?.dispose();
    }
    const entry = {
      data,
      stacked: tf.keep(tf.concat(ws, 0)) as tf.Tensor2D,
      bias: bs ? (tf.keep(tf.concat(bs, 0)) as tf.Tensor1D) : undefined,
    };
    this.cache.set(name, entry);
    return entry;
  }

  /** Frees every kept stack. */
  dispose(): void {
    for (const { stacked, bias } of this.cache.values()) {
      stacked.dispose();
      bias?.dispose();
    }
    this.cache.clear();
  }
}

/**
 * Linear layers reading the same x as one matmul: x @ [W_1; ...; W_n]^T (+ [b_1; ...; b_n]), W_i in HF layout
 * [out_i, in]. Differentiable w.r.t. x, every W_i and b_i: dx = dy @ stacked, and dW (= dy^T @ x) and db (column sums
 * of dy) are split back into the parts. For backends other than wasm (`linear` says why wasm differs).
 * @param stacked the parts stacked (FusedWeights), [sum out_i, in]; bias likewise, when the layers have biases
 * @returns float32 [N, sum out_i]; the caller splits it
 */
export function fusedLinear(x: tf.Tensor2D, ws: tf.Tensor2D[], stacked: tf.Tensor2D, bs?: tf.Tensor1D[], bias?: tf.Tensor1D): tf.Tensor2D {
  const sizes = ws.map((w) => w.shape[0]);
  const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const xi = args[0] as tf.Tensor2D;
    (args[args.length - 1] as tf.GradSaveFunc)([xi]);
    const y = tf.matMul(xi, stacked, false, true);
    return {
      value: (bias ? tf.add(y, bias) : y) as tf.Tensor2D,
      gradFunc: (dy: tf.Tensor2D, saved: tf.Tensor[]) => {
        const dW = tf.split(tf.matMul(dy, saved[0], true, false), sizes, 0);
        const db = bias ? tf.split(tf.sum(dy, 0), sizes, 0) : [];
        return [tf.matMul(dy, stacked), ...dW, ...db];
      },
    };
  });
  return f(x, ...ws, ...(bs ?? [])) as tf.Tensor2D;
}

function hasKernel(name: string): boolean {
  return tf.getKernel(name, tf.getBackend()) !== undefined;
}

/** Largest one-hot matrix (N x V elements) `embedLookup` builds instead of a gather: 16 MB of float32. */
const ONE_HOT_MAX = 4 * 1024 * 1024;

/**
 * Embedding lookup W[ids] with a gradient on backends lacking UnsortedSegmentSum (gather's gradient), e.g. wasm.
 * There, a small table (N x V <= ONE_HOT_MAX, e.g. the char tokenizer's 101 ids) is looked up as one-hot(ids) @ W,
 * exact in float32, with the gradient one-hot^T @ dy: two XNNPACK matmuls, cheaper than the wasm Gather and a
 * host-side scatter-add. Larger tables use the gather with a host-side scatter-add of dy rows into a [V, E]
 * buffer as the gradient.
 * @param w float32 [V, E]; ids int32 [N] -> float32 [N, E]
 */
export function embedLookup(w: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  if (hasKernel('UnsortedSegmentSum')) return tf.gather(w, ids);
  const [V, E] = w.shape;
  if (ids.size * V <= ONE_HOT_MAX) {
    const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      // NB: oneHot with dtype 'float32' returns all zeros on the wasm backend (tfjs 4.22); build int32 and cast.
      const oneHot = tf.cast(tf.oneHot(ids, V), 'float32') as tf.Tensor2D;
      (args[1] as tf.GradSaveFunc)([oneHot]);
      return {
        value: tf.matMul(oneHot, args[0] as tf.Tensor2D) as tf.Tensor2D,
        gradFunc: (dy: tf.Tensor2D, saved: tf.Tensor[]) => tf.tidy(() => tf.matMul(tf.transpose(saved[0]), dy)),
      };
    });
    return f(w) as tf.Tensor2D;
  }
  const idArr = ids.dataSync();
  const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const value = tf.gather(args[0] as tf.Tensor2D, ids);
    const gradFunc = (dy: tf.Tensor2D): tf.Tensor => {
      const d = dy.dataSync();
      const g = new Float32Array(V * E);
      for (let n = 0; n < idArr.length; n++) {
        const r = idArr[n] * E;
        const s = n * E;
        for (let e = 0; e < E; e++) g[r + e] += d[s + e];
      }
      return tf.tensor2d(g, [V, E]);
    };
    return { value, gradFunc };
  });
  return f(w) as tf.Tensor2D;
}

/**
 * Rows `rows` of x [N, E] as float32 [M, E], differentiable w.r.t. x: tf.gather where the backend has its
 * gradient (UnsortedSegmentSum), else a gather whose gradient scatters dy back into [N, E] (scatterND sums
 * repeated rows, as the gradient must).
 */
export function gatherRows(x: tf.Tensor2D, rows: readonly number[]): tf.Tensor2D {
  const index = tf.tensor1d(rows as number[], 'int32');
  if (hasKernel('UnsortedSegmentSum')) return tf.gather(x, index);
  const [N, E] = x.shape;
  const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    (args[1] as tf.GradSaveFunc)([tf.reshape(index, [rows.length, 1])]);
    return {
      value: tf.gather(args[0] as tf.Tensor2D, index) as tf.Tensor2D,
      gradFunc: (dy: tf.Tensor2D, saved: tf.Tensor[]) => tf.scatterND(saved[0], dy, [N, E]),
    };
  });
  return f(x) as tf.Tensor2D;
}

const rotCache = new Map<number, { r: tf.Tensor2D; rT: tf.Tensor2D }>();

/**
 * rotate_half as a matrix and its transpose: rotate_half(x) = x @ R with R[i + D/2, i] = -1 and R[i - D/2, i] = 1.
 * Kept (not disposed) per head dimension, so XNNPACK also keeps their packed forms.
 */
function rotateHalfMatrices(D: number): { r: tf.Tensor2D; rT: tf.Tensor2D } {
  let m = rotCache.get(D);
  if (!m) {
    const half = D / 2;
    const r = new Float32Array(D * D); // r[row, col] = R[row, col]
    for (let i = 0; i < half; i++) r[(i + half) * D + i] = -1;
    for (let i = half; i < D; i++) r[(i - half) * D + i] = 1;
    const rTensor = tf.keep(tf.tensor2d(r, [D, D]));
    m = { r: rTensor, rT: tf.keep(tf.transpose(rTensor)) };
    rotCache.set(D, m);
  }
  return m;
}

/**
 * RoPE's rotate_half(x) = cat(-x[D/2:], x[:D/2]) = x @ R for x float32 [N, D], differentiable w.r.t. x only
 * (dx = dy @ R^T): plain matmuls with a constant right operand (on wasm fast XNNPACK products, where split/concat
 * on the last axis copy the whole tensor per piece).
 */
export function rotateHalf(x: tf.Tensor2D): tf.Tensor2D {
  const { r, rT } = rotateHalfMatrices(x.shape[1]);
  const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => ({
    value: tf.matMul(args[0] as tf.Tensor2D, r) as tf.Tensor2D,
    gradFunc: (dy: tf.Tensor2D) => tf.matMul(dy, rT),
  }));
  return f(x) as tf.Tensor2D;
}

interface RefCountingBackend {
  incRef(dataId: tf.DataId): void;
}

function identity(args: { inputs: tf.NamedTensorInfoMap; backend: unknown }): tf.TensorInfo {
  const x = args.inputs.x as tf.TensorInfo;
  (args.backend as RefCountingBackend).incRef(x.dataId);
  return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
}

let identityInstalled = false;

/**
 * Replaces the wasm backend's Identity kernel by a zero-copy one (idempotent; call after the backend is
 * registered). tfjs-core's engine clones (kernel `Identity`) every tensor it saves for the backward pass, and the
 * wasm Identity copies the whole buffer, so autodiff copied every attention score tensor a few times per layer.
 * Tensors are immutable in tfjs (a Variable's assign swaps its dataId, no kernel writes into its inputs), so the
 * clone can share the input's memory with a reference count, as the wasm Reshape and the cpu Identity already do.
 */
export function installZeroCopyIdentity(): void {
  if (identityInstalled) return;
  identityInstalled = true;
  tf.unregisterKernel('Identity', 'wasm');
  tf.registerKernel({ kernelName: 'Identity', backendName: 'wasm', kernelFunc: identity as unknown as tf.KernelFunc });
}
