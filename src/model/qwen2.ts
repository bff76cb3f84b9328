/**
 * The Qwen2 decoder (DESIGN.md, "Models"; HF transformers `modeling_qwen2.py`): token embedding, N x
 * [RMSNorm -> GQA self-attention with RoPE and q/k/v bias (no o bias) -> residual -> RMSNorm -> SwiGLU MLP
 * -> residual], final RMSNorm, lm_head (optionally tied to the embedding).
 *
 * Weights are tf.Variables keyed by HF names with HF shapes (linear weights [out, in]), so a
 * model.safetensors from HF loads unchanged. All heads are computed in batched matmuls (attention.ts).
 */
import * as tf from '@tensorflow/tfjs';
import { Rng } from '../util/rng';
import { Qwen2Config, activeSlidingWindow, headDim, validateQwen2Config, weightShapes } from './config';
import { causalMask, disposeMask, groupedAttention, type AttentionMask } from './attention';
import { linear, WeightTransposes } from './matmul';
import { applyRope, ropeCosSin } from './rope';

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
  /** The causal attention mask (attention.ts `causalMask`) for Lq queries over Lk = cached T + Lq keys. Not disposed by run. */
  mask: AttentionMask;
  /** Per-layer cache of the previous T positions, or undefined for none. Not disposed by run. */
  cache?: LayerKV[];
  /** When true, return the new per-layer cache (concatenated keys/values); the caller disposes it. */
  returnCache?: boolean;
  /** When true, compute logits only for the last of the Lq positions (logits [B, 1, V]); else for all. */
  lastOnly?: boolean;
}

function hasKernel(name: string): boolean {
  return tf.getKernel(name, tf.getBackend()) !== undefined;
}

/** Largest one-hot matrix (N x V elements) `embedLookup` builds instead of a gather: 16 MB of float32. */
const ONE_HOT_MAX = 4 * 1024 * 1024;

/**
 * Embedding lookup W[ids] with a gradient on backends lacking UnsortedSegmentSum (gather's gradient), e.g. wasm.
 * There, a small table (N x V <= ONE_HOT_MAX, e.g. the char tokenizer's 101 ids) is looked up as one-hot(ids) @ W,
 * exact in float32, with the gradient one-hot^T @ dy: two XNNPACK matmuls, where the wasm Gather and a host-side
 * scatter-add took ~10 ms each for 3200 x 64 (bench/update_breakdown.ts). Larger tables use the gather with a
 * host-side scatter-add of dy rows into a [V, E] buffer as the gradient.
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
 * RMSNorm (Zhang & Sennrich 2019; HF Qwen2RMSNorm): w * x / sqrt(mean(x^2, -1) + eps).
 * @param x float32 [..., E]; w float32 [E] -> float32 [..., E]
 */
export function rmsNorm<T extends tf.Tensor>(x: T, w: tf.Tensor1D, eps: number): T {
  return tf.tidy(() => tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), eps))), w) as T);
}

/** A Qwen2 decoder with tf.Variable weights keyed by HF names. */
export class Qwen2 {
  readonly config: Qwen2Config;
  private readonly vars: Map<string, tf.Variable>;
  private readonly transposes = new WeightTransposes();
  private disposed = false;

  private readonly sliding: { window: number; layer: number } | null;

  private constructor(config: Qwen2Config, vars: Map<string, tf.Variable>) {
    this.config = config;
    this.vars = vars;
    this.sliding = activeSlidingWindow(config);
  }

  /**
   * Deterministic random init from the seeded PRNG (util/rng.ts, stream (seed, 'qwen2-init', name)): linear and
   * embedding weights ~ N(0, 0.02^2) (HF initializer_range), biases 0, norm weights 1.
   */
  static random(config: Qwen2Config, seed: number): Qwen2 {
    const cfg = validateQwen2Config(config);
    const vars = new Map<string, tf.Variable>();
    for (const [name, shape] of weightShapes(cfg)) {
      const n = shape.reduce((a, b) => a * b, 1);
      const data = new Float32Array(n);
      if (name.endsWith('norm.weight')) data.fill(1);
      else if (!name.endsWith('.bias')) {
        const rng = new Rng(seed, 'qwen2-init', name);
        for (let i = 0; i < n; i++) data[i] = 0.02 * rng.normal();
      }
      vars.set(name, tf.variable(tf.tensor(data, shape, 'float32'), true, `${name}#${seed}#${uid()}`));
    }
    return new Qwen2(cfg, vars);
  }

  /**
   * Builds a model from named tensors (e.g. decoded model.safetensors). Tensors are copied (cast to float32);
   * the caller keeps ownership of the map. `lm_head.weight` is ignored when tie_word_embeddings is true.
   * @throws Error naming a missing weight or a shape mismatch (expected vs got).
   */
  static fromNamedTensors(config: Qwen2Config, tensors: Map<string, tf.Tensor>): Qwen2 {
    const cfg = validateQwen2Config(config);
    const vars = new Map<string, tf.Variable>();
    try {
      for (const [name, shape] of weightShapes(cfg)) {
        const t = tensors.get(name);
        if (!t) throw new Error(`Qwen2.fromNamedTensors: weight ${name} is missing (expected shape [${shape}])`);
        if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
          throw new Error(`Qwen2.fromNamedTensors: weight ${name} has shape [${t.shape}], expected [${shape}]`);
        }
        vars.set(name, tf.variable(tf.tidy(() => tf.cast(t, 'float32')), true, `${name}#${uid()}`));
      }
    } catch (e) {
      for (const v of vars.values()) v.dispose();
      throw e;
    }
    return new Qwen2(cfg, vars);
  }

  /** The weights by HF name (the live variables: do not dispose them; clone to keep a snapshot). */
  toNamedTensors(): Map<string, tf.Tensor> {
    return new Map(this.vars);
  }

  /** The trainable variables by HF name (tied lm_head appears once, as model.embed_tokens.weight). */
  trainableVariables(): Map<string, tf.Variable> {
    return new Map(this.vars);
  }

  /** Frees all variables. Using the model afterwards throws. */
  dispose(): void {
    if (this.disposed) return;
    for (const v of this.vars.values()) v.dispose();
    this.vars.clear();
    this.transposes.dispose();
    this.disposed = true;
  }

  /** x @ W^T (+ b) for the linear layer `prefix` (weights `prefix.weight`, `prefix.bias`), with W^T kept while W is unchanged. */
  private linear(x: tf.Tensor2D, prefix: string, withBias = false): tf.Tensor2D {
    const w = this.w(`${prefix}.weight`) as tf.Tensor2D;
    return linear(x, w, withBias ? (this.w(`${prefix}.bias`) as tf.Tensor1D) : undefined, this.transposes.of(prefix, w));
  }

  private w(name: string): tf.Variable {
    const v = this.vars.get(name);
    if (!v) throw new Error(`Qwen2: weight ${name} is missing${this.disposed ? ' (model disposed)' : ''}`);
    return v;
  }

  /**
   * Training forward: causal logits for right-padded rows; position ids 0..L-1 (SPEC.md §4 packing).
   * Pad keys are masked, so a row's real-token logits do not depend on its padding or on other rows.
   * Differentiable (use inside tf.variableGrads).
   * @param ids int32 [B, L]
   * @param attentionMask [B, L] of 1 (real) / 0 (pad), any numeric dtype
   * @returns float32 [B, L, V] logits (rows at pad positions are finite but meaningless)
   * @throws RangeError when L > max_position_embeddings or shapes disagree.
   */
  forward(ids: tf.Tensor2D, attentionMask: tf.Tensor2D): tf.Tensor3D {
    return this.withTrainingInputs(ids, attentionMask, (inp) => this.run(inp).logits);
  }

  /**
   * The final hidden states (after the last RMSNorm) of the training forward, for heads other than
   * lm_head (the critic's value head, HF Qwen2ForTokenClassification). Same inputs and errors as `forward`.
   * @returns float32 [B, L, E], E = hidden_size; differentiable
   */
  hiddenStates(ids: tf.Tensor2D, attentionMask: tf.Tensor2D): tf.Tensor3D {
    return this.withTrainingInputs(ids, attentionMask, (inp) => {
      const [B, L] = ids.shape;
      return tf.tidy(() => tf.reshape(this.finalNorm(this.trunk(inp).x), [B, L, this.config.hidden_size]) as tf.Tensor3D);
    });
  }

  /** Positions 0..L-1 and the causal pad-masking bias of right-padded rows, for `forward` and `hiddenStates`. */
  private withTrainingInputs<T>(ids: tf.Tensor2D, attentionMask: tf.Tensor2D, f: (inp: RunInputs) => T): T {
    const [B, L] = ids.shape;
    if (attentionMask.shape[0] !== B || attentionMask.shape[1] !== L) {
      throw new RangeError(`Qwen2.forward: attentionMask shape [${attentionMask.shape}] != ids shape [${ids.shape}]`);
    }
    const positions = new Int32Array(B * L);
    for (let b = 0; b < B; b++) for (let t = 0; t < L; t++) positions[b * L + t] = t;
    const G = this.config.num_attention_heads / this.config.num_key_value_heads;
    const mask = causalMask(attentionMask.dataSync(), B, L, L, G);
    try {
      return f({ ids, positions, mask });
    } finally {
      disposeMask(mask);
    }
  }

  /**
   * Shared forward with an optional KV cache (used by generate.ts).
   * @returns logits float32 [B, Lq, V] (or [B, 1, V] with lastOnly), and the new cache when returnCache.
   * @throws RangeError when a position is >= max_position_embeddings.
   */
  run(inp: RunInputs): { logits: tf.Tensor3D; cache?: LayerKV[] } {
    const cfg = this.config;
    const [B, Lq] = inp.ids.shape;
    const E = cfg.hidden_size;
    let newCache: LayerKV[] = [];
    const logits = tf.tidy(() => {
      const out = this.trunk(inp);
      newCache = out.cache;
      let xs = out.x;
      let rows = Lq;
      if (inp.lastOnly && Lq > 1) {
        xs = tf.reshape<tf.Rank.R2>(tf.slice(tf.reshape(xs, [B, Lq, E]), [0, Lq - 1, 0], [B, 1, E]), [B, E]);
        rows = 1;
      }
      const head = cfg.tie_word_embeddings ? 'model.embed_tokens' : 'lm_head';
      return tf.reshape(this.linear(this.finalNorm(xs), head), [B, rows, cfg.vocab_size]) as tf.Tensor3D;
    });
    return inp.returnCache ? { logits, cache: newCache } : { logits };
  }

  private finalNorm(x: tf.Tensor2D): tf.Tensor2D {
    return rmsNorm(x, this.w('model.norm.weight') as tf.Tensor1D, this.config.rms_norm_eps);
  }

  /**
   * Embedding and decoder layers (call inside tf.tidy): the residual stream before the final norm,
   * float32 [B * Lq, E], and (with returnCache) the kept per-layer keys/values.
   */
  private trunk(inp: RunInputs): { x: tf.Tensor2D; cache: LayerKV[] } {
    const cfg = this.config;
    const [B, Lq] = inp.ids.shape;
    for (let i = 0; i < inp.positions.length; i++) {
      if (inp.positions[i] >= cfg.max_position_embeddings) {
        throw new RangeError(`Qwen2: position ${inp.positions[i]} >= max_position_embeddings = ${cfg.max_position_embeddings}`);
      }
      // Sliding-window attention is not implemented: it equals full attention while no position reaches the window.
      if (this.sliding && inp.positions[i] >= this.sliding.window) {
        throw new RangeError(`Qwen2: position ${inp.positions[i]} >= sliding_window = ${this.sliding.window} of layer ${this.sliding.layer} (sliding-window attention is not implemented)`);
      }
    }
    const D = headDim(cfg);
    const H = cfg.num_attention_heads;
    const KVH = cfg.num_key_value_heads;
    const { cos, sin } = ropeCosSin(inp.positions, B, Lq, D, cfg.rope_theta);
    const cache: LayerKV[] = [];
    let x: tf.Tensor2D = embedLookup(this.w('model.embed_tokens.weight') as tf.Tensor2D, tf.reshape(inp.ids, [B * Lq]) as tf.Tensor1D);
    for (let l = 0; l < cfg.num_hidden_layers; l++) {
      const p = `model.layers.${l}.`;
      const hN = rmsNorm(x, this.w(`${p}input_layernorm.weight`) as tf.Tensor1D, cfg.rms_norm_eps);
      const q = applyRope(
        tf.reshape(this.linear(hN, `${p}self_attn.q_proj`, true), [B, Lq, H, D]),
        cos,
        sin,
      );
      const kNew = tf.transpose(
        applyRope(
          tf.reshape(this.linear(hN, `${p}self_attn.k_proj`, true), [B, Lq, KVH, D]),
          cos,
          sin,
        ),
        [0, 2, 1, 3],
      ) as tf.Tensor4D;
      const vNew = tf.transpose(
        tf.reshape(this.linear(hN, `${p}self_attn.v_proj`, true), [B, Lq, KVH, D]),
        [0, 2, 1, 3],
      ) as tf.Tensor4D;
      const past = inp.cache?.[l];
      const k = past ? (tf.concat([past.k, kNew], 2) as tf.Tensor4D) : kNew;
      const v = past ? (tf.concat([past.v, vNew], 2) as tf.Tensor4D) : vNew;
      if (inp.returnCache) cache.push({ k: tf.keep(k), v: tf.keep(v) });
      const attn = groupedAttention(q, k, v, inp.mask);
      x = tf.add<tf.Tensor2D>(x, this.linear(tf.reshape(attn, [B * Lq, H * D]), `${p}self_attn.o_proj`));
      const h2 = rmsNorm(x, this.w(`${p}post_attention_layernorm.weight`) as tf.Tensor1D, cfg.rms_norm_eps);
      const gate = this.linear(h2, `${p}mlp.gate_proj`);
      const up = this.linear(h2, `${p}mlp.up_proj`);
      const act = tf.mul(tf.mul(gate, tf.sigmoid(gate)), up) as tf.Tensor2D;
      x = tf.add<tf.Tensor2D>(x, this.linear(act, `${p}mlp.down_proj`));
    }
    return { x, cache };
  }
}

let uidCounter = 0;
function uid(): number {
  return ++uidCounter;
}

