/**
 * A backend running out of memory, told apart from other failures and named by what it was computing. The wasm
 * backend's malloc returns 0 when its heap (at most 4 GiB) cannot grow, and tfjs then writes the tensor at address
 * 0, corrupting the heap (later kernels fail with "table index is out of bounds" or abort), so the guard here
 * throws before that write. TensorFlow fails the op with RESOURCE_EXHAUSTED ("OOM when allocating tensor").
 */
import { totalmem } from 'node:os';
import * as tf from '@tensorflow/tfjs';
import { OUT_OF_MEMORY_ERROR, type OutOfMemoryDetails } from '../contract/errors';
import { WASM_HEAP_BYTES } from './wasm_memory';

/** What a computation works on: `rows` sequences of `tokens` (padded) tokens, in a micro-batch or a generation batch. */
export interface ComputeShape {
  kind: 'micro-batch' | 'generation batch';
  rows: number;
  tokens: number;
}

const GIB = 1024 ** 3;
const gib = (bytes: number) => `${(bytes / GIB).toFixed(2)} GiB`;

/** A backend that could not allocate: what it needed, what it held and what it can hold, and the shape it computed. */
export class BackendOutOfMemoryError extends Error {
  override name = OUT_OF_MEMORY_ERROR;

  constructor(
    readonly details: Omit<OutOfMemoryDetails, 'role' | 'activity' | 'shape'> & { shape: ComputeShape | null },
    options?: ErrorOptions,
  ) {
    super(describe(details), options);
  }

  /** The same failure, naming the shape it happened in (the innermost shape wins). */
  at(shape: ComputeShape): BackendOutOfMemoryError {
    return this.details.shape ? this : new BackendOutOfMemoryError({ ...this.details, shape }, { cause: this.cause });
  }
}

function describe(d: BackendOutOfMemoryError['details']): string {
  const where = d.shape ? ` in a ${d.shape.kind} of ${d.shape.rows} x ${d.shape.tokens} tokens (rows x tokens)` : '';
  const held = `${gib(d.heldBytes)} ${d.backend === 'wasm' ? 'held by tensors' : 'resident in the process'}`;
  const needed =
    d.requestBytes === null
      ? `the backend failed (${d.reason}) with ${held}`
      : `it needed at least ${gib(d.heldBytes + d.requestBytes)} (${held} + an allocation of ${gib(d.requestBytes)})`;
  const holds = d.backend === 'wasm' ? `the wasm backend holds at most ${gib(d.capacityBytes)}` : `this host has ${gib(d.capacityBytes)}`;
  return `out of ${d.backend} memory${where}: ${needed}; ${holds}`;
}

/** Bytes of each tensor buffer in the wasm heap, by address, and their sum (kept by the guard). */
const wasmBuffers = new Map<number, number>();
let wasmHeld = 0;

/**
 * What the backend holds: on wasm the bytes of its live tensor buffers; on TensorFlow the process's resident
 * memory. (The engine's tf.memory() counts a buffer once per tensor viewing it, so reshapes count twice.)
 */
const heldBytes = (backend: string) => (backend === 'wasm' ? wasmHeld : process.memoryUsage().rss);

type WasmFunction = (n: number) => number;

/**
 * Puts `wrap` around the module's export `name`. Emscripten's first call of an export replaces the property with
 * the raw function, so the property keeps whatever is set behind the wrapper.
 */
function intercept(wasm: Record<string, WasmFunction>, name: string, wrap: (raw: (n: number) => number) => WasmFunction): void {
  let raw = wasm[name];
  const wrapped = wrap((n) => raw(n));
  Object.defineProperty(wasm, name, {
    get: () => wrapped,
    set: (f: WasmFunction) => {
      raw = f;
    },
    configurable: true,
  });
}

/**
 * Makes the active wasm backend throw BackendOutOfMemoryError when it cannot allocate a tensor, instead of
 * writing it at address 0, and keeps the bytes of its tensor buffers. Every tensor's memory comes from the
 * module's `_malloc` and goes back through `_free` (BackendWasm.move, disposeData). malloc's size is a 32-bit
 * integer: a tensor of 4 GiB or more would wrap around to a small allocation, so one larger than the heap's
 * ceiling is refused before malloc sees it.
 */
export function guardWasmAllocations(): void {
  const wasm = (tf.backend() as unknown as { wasm: Record<string, WasmFunction> }).wasm;
  intercept(wasm, '_malloc', (malloc) => (bytes) => {
    const at = bytes > WASM_HEAP_BYTES ? 0 : malloc(bytes) >>> 0;
    if (at === 0 && bytes > 0)
      throw new BackendOutOfMemoryError({
        backend: 'wasm',
        requestBytes: bytes,
        heldBytes: wasmHeld,
        capacityBytes: WASM_HEAP_BYTES,
        reason: bytes > WASM_HEAP_BYTES ? 'larger than the heap' : 'malloc failed',
        shape: null,
      });
    wasmBuffers.set(at, bytes);
    wasmHeld += bytes;
    return at;
  });
  intercept(wasm, '_free', (free) => (at) => {
    wasmHeld -= wasmBuffers.get(at >>> 0) ?? 0;
    wasmBuffers.delete(at >>> 0);
    return free(at);
  });
}

/** Bytes per element of the dtypes TensorFlow names in its out-of-memory message. */
const BYTES_PER = { float: 4, int32: 4, int64: 8, double: 8, bool: 1, uint8: 1 } as Record<string, number>;

/**
 * `err` as a BackendOutOfMemoryError when it is one, or when it is the backend running out of memory: on wasm
 * emscripten's abort or a failed heap growth, or a WebAssembly RuntimeError while the heap is within 10% of its
 * ceiling (what an unguarded failed allocation turns into); on TensorFlow RESOURCE_EXHAUSTED. Else null.
 */
export function outOfMemoryOf(err: unknown): BackendOutOfMemoryError | null {
  if (err instanceof BackendOutOfMemoryError) return err;
  if (!(err instanceof Error)) return null;
  const backend = tf.getBackend();
  if (backend === 'wasm') {
    const heap = (tf.backend() as unknown as { wasm?: { HEAPU8?: Uint8Array } }).wasm?.HEAPU8?.buffer.byteLength ?? 0;
    const aborted = /Aborted\(|out of memory|Cannot enlarge memory|Memory\.grow|allocation failed/i.test(err.message);
    if (!aborted && !(err.name === 'RuntimeError' && heap >= 0.9 * WASM_HEAP_BYTES)) return null;
    const reason = `${err.message.split('\n')[0]}, heap grown to ${gib(heap)}`;
    return new BackendOutOfMemoryError(
      { backend, requestBytes: null, heldBytes: heldBytes(backend), capacityBytes: WASM_HEAP_BYTES, reason, shape: null },
      { cause: err },
    );
  }
  if (backend === 'tensorflow') {
    const oom = /OOM when allocating tensor with shape\[([\d,]*)\] and type (\w+)/.exec(err.message);
    if (!oom && !/RESOURCE_EXHAUSTED|TF_Status: 8\b/.test(err.message)) return null;
    const requestBytes = oom ? oom[1].split(',').reduce((n, d) => n * Number(d || 1), 1) * (BYTES_PER[oom[2]] ?? 4) : null;
    const reason = err.message.replace(/^Invalid TF_Status: \d+\nMessage: /, '').split('\n')[0];
    return new BackendOutOfMemoryError(
      { backend, requestBytes, heldBytes: heldBytes(backend), capacityBytes: totalmem(), reason, shape: null },
      { cause: err },
    );
  }
  return null;
}

/**
 * Runs `f`, a synchronous computation over `shape`; a backend running out of memory in it throws
 * BackendOutOfMemoryError naming the shape. Other errors pass unchanged.
 */
export function atShape<T>(shape: ComputeShape, f: () => T): T {
  try {
    return f();
  } catch (err) {
    throw outOfMemoryOf(err)?.at(shape) ?? err;
  }
}
