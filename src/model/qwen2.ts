/**
 * The Qwen2 and Llama decoder read top to bottom (HF transformers `modeling_qwen2.py`, `modeling_llama.py`): RMSNorm,
 * RoPE (rope.ts), grouped-query attention (attention.ts), SwiGLU MLP, the decoder layer, the model. The two architectures differ
 * only in which linear layers have a bias, which the config's weight list (config.ts `weightShapes`) decides: a layer
 * adds its bias when the model holds one. Its config (config.json fields) is config.ts, the
 * per-token log-probs the losses read logprobs.ts, backend-specific kernels (matmuls, embedding lookup,
 * rotate_half) kernels.ts. Weights are tf.Variables keyed by HF names and shapes: HF safetensors load as is.
 */
import * as tf from '@tensorflow/tfjs';
import { Rng } from '../util/rng';
import { groupedAttention } from './attention';
import { causalMask, disposeMask } from './attention_mask';
import { type CheckpointStage, checkpointedStages } from './checkpoint';
import { activeSlidingWindow, assertPositions, headDim, type Qwen2Config, validateQwen2Config, weightShapes } from './config';
import { embedLookup, FusedWeights, fusedLinear, gatherRows, linear, WeightTransposes } from './kernels';
import { layerWeightsOf, leanDecoderLayer } from './lean_layer';
import type { LoraAdapters } from './lora';
import { rmsNorm } from './rms_norm';
import { applyRope, type RopeTables, ropeCosSin } from './rope';
import type { LayerKV, RunInputs, TrainingForwardOptions } from './run_inputs';

export type { LayerKV, RunInputs, TrainingForwardOptions };
export { rmsNorm };

/** [B, L, KVH, D] -> [B, KVH, L, D] (a reshape when L = 1). */
function headsFirst(x: tf.Tensor4D): tf.Tensor4D {
  const [B, L, KVH, D] = x.shape;
  return (L === 1 ? tf.reshape(x, [B, KVH, 1, D]) : tf.transpose(x, [0, 2, 1, 3])) as tf.Tensor4D;
}

// ---------------------------------------------------------------------------------------------------------
// The model: token embedding, N x decoder layer, final RMSNorm, lm_head (optionally tied to the embedding).

/** A Qwen2 or Llama decoder with tf.Variable weights keyed by HF names. */
export class Qwen2 {
  readonly config: Qwen2Config;
  private readonly vars: Map<string, tf.Variable>;
  private readonly transposes: WeightTransposes;
  private readonly fused: FusedWeights;
  private disposed = false;
  private readonly sliding: { window: number; layer: number } | null;
  /** LoRA adapters applied on top of the weights (lora.ts), owned by this model; null for none. */
  private lora: LoraAdapters | null = null;
  /** The trainable names an update leaves alone (`freeze`). */
  private frozen: (name: string) => boolean = () => false;

  /** @param view the weights and caches of another model, which keeps owning them (`baseView`) */
  private constructor(
    config: Qwen2Config,
    vars: Map<string, tf.Variable>,
    private readonly view?: Qwen2,
  ) {
    this.config = config;
    this.vars = vars;
    this.sliding = activeSlidingWindow(config);
    this.transposes = view ? view.transposes : new WeightTransposes();
    this.fused = view ? view.fused : new FusedWeights();
  }

  /** Seeded init (Rng stream (seed, 'qwen2-init', name)): weights ~ N(0, 0.02^2) (HF initializer_range), biases 0, norms 1. */
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
      // In a tidy so the initial tensor goes: a variable shares its data, and the tensor would keep it alive.
      vars.set(
        name,
        tf.tidy(() => tf.variable(tf.tensor(data, shape, 'float32'), true, `${name}#${seed}#${uid()}`)),
      );
    }
    return new Qwen2(cfg, vars);
  }

  /**
   * A model of named tensors (e.g. decoded model.safetensors), copied and cast to float32 (the caller keeps the
   * map); `lm_head.weight` is ignored when tie_word_embeddings. @throws Error naming a missing or misshapen weight
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
        // The cast goes with the tidy (a variable shares its data, and the cast would keep it alive after dispose).
        vars.set(
          name,
          tf.tidy(() => tf.variable(tf.cast(t, 'float32'), true, `${name}#${uid()}`)),
        );
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

  /** Applies LoRA adapters on top of the weights, or none: the model owns them from then on and frees the previous ones. */
  setAdapters(adapters: LoraAdapters | null): void {
    if (this.lora !== adapters) this.lora?.dispose();
    this.lora = adapters;
  }

  /** Which trainable names an update leaves alone (ROLL's freeze_module_prefix): `trainableVariables` omits them. */
  freeze(frozen: (name: string) => boolean): void {
    this.frozen = frozen;
  }

  /** The LoRA adapters the model applies, or null. */
  adapters(): LoraAdapters | null {
    return this.lora;
  }

  /**
   * The same weights without the adapters (the KL reference of a LoRA run): no copy of anything. The view lives as
   * long as this model; disposing it frees nothing.
   */
  baseView(): Qwen2 {
    return new Qwen2(this.config, this.vars, this);
  }

  /**
   * The trainable variables by name, but those `freeze` names: the adapters' (LoraAdapters.variables) when the
   * model has adapters, else its weights (HF names; a tied lm_head appears once, as model.embed_tokens.weight).
   */
  trainableVariables(): Map<string, tf.Variable> {
    return new Map([...(this.lora?.variables() ?? this.vars)].filter(([name]) => !this.frozen(name)));
  }

  /** Frees all variables (a view's: nothing). Using the model afterwards throws. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (this.view) return;
    this.lora?.dispose();
    for (const v of this.vars.values()) v.dispose();
    this.vars.clear();
    this.transposes.dispose();
    this.fused.dispose();
  }

  /**
   * Training forward, differentiable: causal logits for right-padded rows; position ids 0..L-1 (docs/numerics.md §4
   * packing). Pad keys are masked, so a row's real-token logits do not depend on its padding or on other rows.
   * @param ids int32 [B, L]; attentionMask [B, L] of 1 (real) / 0 (pad), any numeric dtype
   * @returns float32 [B, L, V] logits (rows at pad positions are finite but meaningless)
   * @throws RangeError when L > max_position_embeddings or shapes disagree.
   */
  forward(ids: tf.Tensor2D, attentionMask: tf.Tensor2D, opts: TrainingForwardOptions = {}): tf.Tensor3D {
    return this.withTrainingInputs(ids, attentionMask, opts, (inp) => this.run(inp).logits);
  }

  /**
   * The final hidden states float32 [B, L, E] (after the last RMSNorm) of the training forward, for heads other
   * than lm_head (the critic's value head, value_model.ts). Same inputs and errors as `forward`; differentiable.
   */
  hiddenStates(ids: tf.Tensor2D, attentionMask: tf.Tensor2D, opts: TrainingForwardOptions = {}): tf.Tensor3D {
    return this.withTrainingInputs(ids, attentionMask, opts, (inp) => {
      const [B, L] = ids.shape;
      return tf.tidy(() => tf.reshape(this.finalNorm(this.trunk(inp).x), [B, L, this.config.hidden_size]) as tf.Tensor3D);
    });
  }

  /**
   * The final hidden states (after the last RMSNorm) of the training forward at some positions only, float32 [M, E]:
   * `rows` are indices b * L + t into the B * L positions. Differentiable. The vocabulary work then runs on these
   * M rows only, in chunks, with `lmHead` (logprobs.ts).
   */
  hiddenAt(ids: tf.Tensor2D, attentionMask: tf.Tensor2D, rows: readonly number[], opts: TrainingForwardOptions = {}): tf.Tensor2D {
    return this.withTrainingInputs(ids, attentionMask, opts, (inp) => tf.tidy(() => this.finalNorm(gatherRows(this.trunk(inp).x, rows))));
  }

  /** lm_head's weight float32 [V, E] (the embedding's when tied; the live variable) and, on wasm, its kept transpose. */
  lmHead(): { w: tf.Tensor2D; wT?: tf.Tensor2D } {
    const prefix = this.headName();
    const w = this.w(`${prefix}.weight`) as tf.Tensor2D;
    return { w, wT: this.transposes.of(prefix, w) };
  }

  /** The weights lm_head multiplies by: the embedding when tied. */
  private headName(): string {
    return this.config.tie_word_embeddings ? 'model.embed_tokens' : 'lm_head';
  }

  /** Positions 0..L-1 and the causal pad-masking bias of right-padded rows, for `forward` and `hiddenStates`. */
  private withTrainingInputs<T>(ids: tf.Tensor2D, attentionMask: tf.Tensor2D, opts: TrainingForwardOptions, f: (inp: RunInputs) => T): T {
    const [B, L] = ids.shape;
    if (attentionMask.shape[0] !== B || attentionMask.shape[1] !== L) {
      throw new RangeError(`Qwen2.forward: attentionMask shape [${attentionMask.shape}] != ids shape [${ids.shape}]`);
    }
    const positions = new Int32Array(B * L);
    for (let b = 0; b < B; b++) for (let t = 0; t < L; t++) positions[b * L + t] = t;
    const G = this.config.num_attention_heads / this.config.num_key_value_heads;
    const mask = causalMask(attentionMask.dataSync(), B, L, L, G);
    try {
      return f({ ids, positions, mask, gradientCheckpointing: opts.gradientCheckpointing, loraDropoutSeed: opts.loraDropoutSeed });
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
      return tf.reshape(this.linear(this.finalNorm(xs), this.headName()), [B, rows, cfg.vocab_size]) as tf.Tensor3D;
    });
    return inp.returnCache ? { logits, cache: newCache } : { logits };
  }

  /**
   * Embedding and decoder layers (call inside tf.tidy): the residual stream before the final norm,
   * float32 [B * Lq, E], and (with returnCache) the kept per-layer keys/values.
   */
  private trunk(inp: RunInputs): { x: tf.Tensor2D; cache: LayerKV[] } {
    const cfg = this.config;
    const [B, Lq] = inp.ids.shape;
    assertPositions(cfg, this.sliding, inp.positions);
    const rope = ropeCosSin(inp.positions, B, Lq, headDim(cfg), cfg.rope_theta);
    const cache: LayerKV[] = [];
    let x: tf.Tensor2D = embedLookup(this.w('model.embed_tokens.weight') as tf.Tensor2D, tf.reshape(inp.ids, [B * Lq]) as tf.Tensor1D);
    if (inp.gradientCheckpointing && !inp.cache && !inp.returnCache) {
      const context = [rope.cos, rope.sin, ...inp.mask.chunks.map((c) => c.bias)];
      return { x: checkpointedStages(x, this.layerStages(inp), context), cache };
    }
    // One scope per layer frees its intermediates as soon as it is done (the gradient tape keeps what backprop
    // needs); without it a forward holds every layer's at once, GBs of a prefill at a real model's size.
    for (let l = 0; l < cfg.num_hidden_layers; l++) {
      const input = x;
      x = tf.tidy(() => this.decoderLayer(l, input, rope, inp, cache));
    }
    return { x, cache };
  }

  /**
   * The decoder layers as checkpointed stages (checkpoint.ts) of a training forward. The RoPE tables and the mask's
   * biases come in as the stages' context: [cos, sin, ...one bias per mask chunk].
   */
  private layerStages(inp: RunInputs): CheckpointStage[] {
    const stages: CheckpointStage[] = [];
    for (let l = 0; l < this.config.num_hidden_layers; l++) {
      const p = `model.layers.${l}.`;
      stages.push({
        weights: [...this.trainableVariables()].filter(([name]) => name.startsWith(p)).map(([, v]) => v),
        run: (x, [cos, sin, ...biases]) => {
          const mask = { ...inp.mask, chunks: inp.mask.chunks.map((c, i) => ({ ...c, bias: biases[i] as tf.Tensor4D })) };
          return this.decoderLayer(l, x, { cos: cos as tf.Tensor4D, sin: sin as tf.Tensor4D }, { ...inp, mask }, []);
        },
      });
    }
    return stages;
  }

  /**
   * One decoder layer: x + self-attention(RMSNorm(x)), then + MLP(RMSNorm(.)). x float32 [B * Lq, E]. A training
   * forward off wasm runs it as one op with its own backward pass (lean_layer.ts), which keeps far less for it.
   */
  private decoderLayer(l: number, x: tf.Tensor2D, rope: RopeTables, inp: RunInputs, cache: LayerKV[]): tf.Tensor2D {
    const p = `model.layers.${l}.`;
    const eps = this.config.rms_norm_eps;
    // Only a training forward asks for the adapters as the lean layer takes them: cached generation never does.
    const training = !inp.cache && !inp.returnCache && tf.getBackend() !== 'wasm';
    const adapters = training && this.lora ? this.lora.layerAdapters(p, inp.loraDropoutSeed) : undefined;
    if (training && adapters !== null) {
      const [B, L] = inp.ids.shape;
      const { num_attention_heads: H, num_key_value_heads: KVH } = this.config;
      const weights = layerWeightsOf((name) => this.weight(name), this.fused, p);
      return leanDecoderLayer(x, weights, { B, L, H, KVH, D: headDim(this.config), eps }, rope, inp.mask, adapters);
    }
    const attnIn = rmsNorm(x, this.w(`${p}input_layernorm.weight`) as tf.Tensor1D, eps);
    const h = tf.add<tf.Tensor2D>(x, this.selfAttention(l, attnIn, rope, inp, cache));
    return tf.add<tf.Tensor2D>(
      h,
      this.mlp(p, rmsNorm(h, this.w(`${p}post_attention_layernorm.weight`) as tf.Tensor1D, eps), inp.loraDropoutSeed),
    );
  }

  /**
   * Self-attention of layer l: q/k/v projections (with bias in Qwen2), RoPE on q and k, the layer's cached
   * keys/values before the new ones (pushed to `cache` with returnCache), grouped attention, o_proj.
   */
  private selfAttention(l: number, x: tf.Tensor2D, { cos, sin }: RopeTables, inp: RunInputs, cache: LayerKV[]): tf.Tensor2D {
    const [B, Lq] = inp.ids.shape;
    const p = `model.layers.${l}.self_attn.`;
    const D = headDim(this.config);
    const H = this.config.num_attention_heads;
    const KVH = this.config.num_key_value_heads;
    let q: tf.Tensor4D;
    let kRope: tf.Tensor4D;
    let vProj: tf.Tensor2D;
    if (tf.getBackend() === 'wasm') {
      q = applyRope(tf.reshape(this.linear(x, `${p}q_proj`, inp.loraDropoutSeed), [B, Lq, H, D]), cos, sin);
      kRope = applyRope(tf.reshape(this.linear(x, `${p}k_proj`, inp.loraDropoutSeed), [B, Lq, KVH, D]), cos, sin);
      vProj = this.linear(x, `${p}v_proj`, inp.loraDropoutSeed);
    } else {
      // One matmul for q, k and v, and RoPE on q and k together.
      const [qk, vPart] = tf.split(this.stackedQKV(x, l, inp.loraDropoutSeed), [(H + KVH) * D, KVH * D], 1);
      [q, kRope] = tf.split(applyRope(tf.reshape(qk, [B, Lq, H + KVH, D]), cos, sin), [H, KVH], 2) as [tf.Tensor4D, tf.Tensor4D];
      vProj = vPart as tf.Tensor2D;
    }
    const kNew = headsFirst(kRope);
    const vNew = headsFirst(tf.reshape(vProj, [B, Lq, KVH, D]));
    const past = inp.cache?.[l];
    const k = past ? (tf.concat([past.k, kNew], 2) as tf.Tensor4D) : kNew;
    const v = past ? (tf.concat([past.v, vNew], 2) as tf.Tensor4D) : vNew;
    if (inp.returnCache) cache.push({ k: tf.keep(k), v: tf.keep(v) });
    const attn = groupedAttention(q, k, v, inp.mask);
    return this.linear(tf.reshape(attn, [B * Lq, H * D]), `${p}o_proj`, inp.loraDropoutSeed);
  }

  /** The SwiGLU MLP (Shazeer 2020): down(silu(gate(x)) * up(x)). */
  private mlp(p: string, x: tf.Tensor2D, seed?: number): tf.Tensor2D {
    // Not stacked like q/k/v: splitting the [N, 2I] product apart copies it, which costs what one matmul call saves.
    const gate = this.linear(x, `${p}mlp.gate_proj`, seed);
    const up = this.linear(x, `${p}mlp.up_proj`, seed);
    const act = tf.mul(tf.mul(gate, tf.sigmoid(gate)), up) as tf.Tensor2D;
    return this.linear(act, `${p}mlp.down_proj`, seed);
  }

  private finalNorm(x: tf.Tensor2D): tf.Tensor2D {
    return rmsNorm(x, this.w('model.norm.weight') as tf.Tensor1D, this.config.rms_norm_eps);
  }

  /**
   * x @ W^T (+ b) for the linear layer `prefix` (weights `prefix.weight`, and `prefix.bias` when the model has it),
   * with W^T kept while W is unchanged.
   */
  private linear(x: tf.Tensor2D, prefix: string, dropoutSeed?: number): tf.Tensor2D {
    const w = this.w(`${prefix}.weight`) as tf.Tensor2D;
    const y = linear(x, w, this.weight(`${prefix}.bias`) as tf.Tensor1D | undefined, this.transposes.of(prefix, w));
    return this.lora?.has(prefix) ? tf.add(y, this.lora.delta(x, prefix, dropoutSeed)) : y;
  }

  /** q, k and v of layer l as one matmul on their stacked weights (not on wasm). */
  private stackedQKV(x: tf.Tensor2D, l: number, dropoutSeed?: number): tf.Tensor2D {
    const p = `model.layers.${l}.self_attn.`;
    const { q, k, v, qkv } = layerWeightsOf((name) => this.weight(name), this.fused, `model.layers.${l}.`);
    const bs = q.b && k.b && v.b ? [q.b, k.b, v.b] : undefined;
    const y = fusedLinear(x, [q.w, k.w, v.w], qkv.w, bs, qkv.b);
    const delta = this.lora?.stackedDelta(
      x,
      [`${p}q_proj`, `${p}k_proj`, `${p}v_proj`],
      [q.w.shape[0], k.w.shape[0], v.w.shape[0]],
      dropoutSeed,
    );
    return delta ? tf.add(y, delta) : y;
  }

  /** The weight the forward uses: an additional_target's trained copy when the adapters have one, else the model's own. */
  private weight(name: string): tf.Variable | undefined {
    return this.lora?.copyOf(name) ?? this.vars.get(name);
  }

  private w(name: string): tf.Variable {
    const v = this.weight(name);
    if (!v) throw new Error(`Qwen2: weight ${name} is missing${this.disposed ? ' (model disposed)' : ''}`);
    return v;
  }
}

let uidCounter = 0;
function uid(): number {
  return ++uidCounter;
}
