/**
 * Shared measuring sticks of the benches: this process's wasm/cpu matmul speed and the analytic
 * FLOP count of a Qwen2 forward pass.
 */
import * as tf from '@tensorflow/tfjs';
import { headDim, type Qwen2Config } from '../src/model/config';

/** GFLOP/s of a 256 x 256 x 256 float32 matmul on the current backend (mean of 20 after one warm-up). */
export function matmulGflops(): number {
  const a = tf.randomNormal([256, 256]);
  const b = tf.randomNormal([256, 256]);
  tf.matMul(a, b).dispose();
  const n = 20;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const c = tf.matMul(a, b);
    c.dataSync();
    c.dispose();
  }
  const ms = (performance.now() - t0) / n;
  tf.dispose([a, b]);
  return (2 * 256 ** 3) / ms / 1e6;
}

/**
 * FLOPs of one forward pass over B rows of L tokens, counted as computed: 2 * tokens * (matmul
 * parameters incl. lm_head) + per layer 4 * B * H * L^2 * D (scores and probs @ V over the full L x L).
 * A forward + backward pass is 3x this.
 */
export function forwardFlops(cfg: Qwen2Config, B: number, L: number): number {
  const E = cfg.hidden_size;
  const D = headDim(cfg);
  const H = cfg.num_attention_heads;
  const KV = cfg.num_key_value_heads * D;
  const perLayer = E * H * D + 2 * E * KV + H * D * E + 3 * E * cfg.intermediate_size;
  const matParams = cfg.num_hidden_layers * perLayer + cfg.vocab_size * E;
  return 2 * B * L * matParams + cfg.num_hidden_layers * 4 * B * H * L * L * D;
}
