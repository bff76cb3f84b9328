/**
 * What the wasm backend can hold. Its heap grows to 4 GiB (32-bit addresses) and no further, and running out
 * corrupts the backend, so a model that cannot fit is refused before it is loaded, with the memory it would need.
 */
import * as tf from '@tensorflow/tfjs';
import { ConfigError } from '../contract/errors';
import { type Qwen2Config, weightShapes } from './config';
import { KEEP_TRANSPOSE_MAX } from './kernels';

/** The wasm heap's ceiling in bytes (tfjs-backend-wasm 4.22's getHeapMax). */
export const WASM_HEAP_BYTES = 4294901760;

/** What a process computes with the model: rollouts (forward passes) or updates (also gradients). */
export type ModelJob = 'rollout' | 'update';

/**
 * A lower bound of the wasm heap bytes `job` needs for a model of `cfg`, counting only what must be held at
 * once whatever the batch: the float32 weights, the transposes `WeightTransposes` keeps (weights used by a
 * linear layer, up to KEEP_TRANSPOSE_MAX elements), one transpose of the largest weight over that (made per
 * call), and for an update a gradient and AdamW's two moments per weight (the moments live beside the weights).
 * Activations come on top.
 */
export function wasmBytesAtLeast(cfg: Qwen2Config, job: ModelJob): number {
  let params = 0;
  let kept = 0;
  let largestTransient = 0;
  for (const [name, shape] of weightShapes(cfg)) {
    const n = shape.reduce((a, b) => a * b, 1);
    params += n;
    const linear = shape.length === 2 && (name !== 'model.embed_tokens.weight' || cfg.tie_word_embeddings);
    if (linear && n <= KEEP_TRANSPOSE_MAX) kept += n;
    else if (linear) largestTransient = Math.max(largestTransient, n);
  }
  return 4 * (params + kept + largestTransient + (job === 'update' ? 3 * params : 0));
}

const GIB = 1024 ** 3;

/**
 * Refuses, on the wasm backend, a model whose `job` cannot fit in the wasm heap.
 * @throws ConfigError naming the backend, the bytes needed and the way out
 */
export function assertFitsBackend(cfg: Qwen2Config, job: ModelJob, source: string): void {
  if (tf.getBackend() !== 'wasm') return;
  const need = wasmBytesAtLeast(cfg, job);
  if (need <= WASM_HEAP_BYTES) return;
  throw new ConfigError(source, [
    `backend wasm: ${job === 'update' ? 'an update' : 'a rollout'} of this model (${cfg.num_hidden_layers} layers, hidden ${cfg.hidden_size}, vocabulary ${cfg.vocab_size}) needs at least ${(need / GIB).toFixed(2)} GiB of wasm memory (weights${job === 'update' ? ', gradients, AdamW moments' : ''} and weight transposes, before activations); wasm holds at most ${(WASM_HEAP_BYTES / GIB).toFixed(2)} GiB. Run this role on the native backend: \`starpo backend install\`, then --backend tensorflow (docs/backends.md)`,
  ]);
}
