/** The inputs of the decoder's forward (qwen2.ts): what training and cached generation pass to `Qwen2.run`. */
import type * as tf from '@tensorflow/tfjs';
import type { AttentionMask } from './attention_mask';

/** Cached keys/values of one layer, after RoPE: float32 [B, KVH, T, D] each. */
export interface LayerKV {
  k: tf.Tensor4D;
  v: tf.Tensor4D;
}

/** Inputs of `Qwen2.run` (the shared forward used by training and by cached generation). */
export interface RunInputs {
  /** int32 [B, Lq] token ids. */
  ids: tf.Tensor2D;
  /** Row-major [B * Lq] position ids (RoPE positions). */
  positions: ArrayLike<number>;
  /** The causal attention mask (`causalMask`) for Lq queries over Lk = cached T + Lq keys. Not disposed by run. */
  mask: AttentionMask;
  /** Per-layer cache of the previous T positions, or undefined for none. Not disposed by run. */
  cache?: LayerKV[];
  /** When true, return the new per-layer cache (concatenated keys/values); the caller disposes it. */
  returnCache?: boolean;
  /** When true, compute logits only for the last of the Lq positions (logits [B, 1, V]); else for all. */
  lastOnly?: boolean;
  /** TrainingForwardOptions.gradientCheckpointing (without a cache: a training forward). */
  gradientCheckpointing?: boolean;
  /** TrainingForwardOptions.loraDropoutSeed. */
  loraDropoutSeed?: number;
}

/** Options of the training forwards (`forward`, `hiddenStates`, `hiddenAt`). */
export interface TrainingForwardOptions {
  /**
   * Recompute each decoder layer's forward in the backward pass instead of keeping its intermediates on the tape
   * (checkpoint.ts): the same gradients for about one more forward of compute, the tape then holding one [B * L, E]
   * input per layer. ROLL's `model_args.disable_gradient_checkpointing: false`. Default false.
   */
  gradientCheckpointing?: boolean;
  /**
   * Applies the LoRA adapters' dropout (lora_dropout) to their inputs, the masks drawn from this seed and each
   * module's name (so a recomputed layer draws the same masks); unset: no dropout (a forward without gradients).
   */
  loraDropoutSeed?: number;
}
