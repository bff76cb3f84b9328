/**
 * Shared measuring sticks of the benches: this process's wasm/cpu matmul speed and the analytic
 * model FLOP count of a Qwen2 decoder.
 */
import * as tf from '@tensorflow/tfjs';
import { headDim, type Qwen2Config } from '../src/model/config';

/**
 * GFLOP/s of an n x n x n float32 matmul on the current backend (default 256; mean of 20 after one warm-up; the
 * same operands every time, so XNNPACK reuses its packed right operand: the backend's best case), by wall time and
 * by this process's CPU time (the wasm backend runs on one thread: CPU time is the wall time the process would take
 * with a core of its own, so the CPU-time rate stays meaningful while other processes load the machine).
 */
export function matmulGflops(n = 256): { wall: number; cpu: number } {
  const a = tf.randomNormal([n, n]);
  const b = tf.randomNormal([n, n]);
  tf.matMul(a, b).dispose();
  const reps = 20;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  for (let i = 0; i < reps; i++) {
    const c = tf.matMul(a, b);
    c.dataSync();
    c.dispose();
  }
  const cpuMs = cpuSecondsSince(c0) * 1000;
  const ms = performance.now() - t0;
  tf.dispose([a, b]);
  const flops = 2 * n ** 3 * reps;
  return { wall: flops / ms / 1e6, cpu: flops / cpuMs / 1e6 };
}

/** CPU seconds (user + system) this process used since `start` (a process.cpuUsage() value). */
export function cpuSecondsSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1e6;
}

/** Parameters in the matmuls of one token's forward: q/k/v/o and the MLP per layer, lm_head excluded. */
function trunkMatParams(cfg: Qwen2Config): number {
  const E = cfg.hidden_size;
  const D = headDim(cfg);
  const KV = cfg.num_key_value_heads * D;
  return (
    cfg.num_hidden_layers * (E * cfg.num_attention_heads * D + 2 * E * KV + cfg.num_attention_heads * D * E + 3 * E * cfg.intermediate_size)
  );
}

/**
 * Model FLOPs of one forward over sequences of the given real lengths: the useful work only, no padding, causal
 * attention over the lower triangle (a query at position t against t + 1 keys: 4 * H * D * (t + 1) FLOPs per
 * layer for scores and probs @ V), 2 FLOPs per matmul parameter and token, lm_head for every token (training) or
 * only the last one of each sequence (generation prefill). A forward + backward pass is 3x this.
 */
export function modelFlops(cfg: Qwen2Config, lengths: readonly number[], logits: 'all' | 'last' = 'all'): number {
  const lmHead = 2 * cfg.vocab_size * cfg.hidden_size;
  const attention = 2 * cfg.num_hidden_layers * cfg.num_attention_heads * headDim(cfg); // x L (L + 1)
  return lengths.reduce((s, L) => s + 2 * trunkMatParams(cfg) * L + lmHead * (logits === 'all' ? L : 1) + attention * L * (L + 1), 0);
}

/** Model FLOPs of one cached decoding step: a new token at 0-based position p, attending p + 1 keys. */
export function decodeFlops(cfg: Qwen2Config, p: number): number {
  return (
    2 * trunkMatParams(cfg) +
    2 * cfg.vocab_size * cfg.hidden_size +
    4 * cfg.num_hidden_layers * cfg.num_attention_heads * headDim(cfg) * (p + 1)
  );
}

/** Fraction of the tokens of length-bucketed micro-batches that are padding: 1 - real / sum(rows x longest). */
export function paddingFraction(batches: readonly (readonly number[])[], lengths: readonly number[]): number {
  let real = 0;
  let padded = 0;
  for (const idx of batches) {
    const L = Math.max(...idx.map((i) => lengths[i]));
    padded += idx.length * L;
    real += idx.reduce((s, i) => s + lengths[i], 0);
  }
  return 1 - real / padded;
}
