/**
 * LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models") as Hugging Face PEFT applies it to a
 * linear layer: y = x W^T + b + (alpha / r) * x A^T B^T, with A [r, in] drawn as PEFT's kaiming_uniform(a = sqrt(5))
 * (uniform in +-1/sqrt(in)) and B [out, r] zero, so a fresh adapter leaves the model unchanged. The base weights
 * stay frozen; the adapters (and the `additional_target` modules, PEFT's modules_to_save) are what an update trains.
 * Targets follow ROLL's lora_target (lora_targets.ts).
 */
import * as tf from '@tensorflow/tfjs';
import type { LoraSettings } from '../contract';
import { deriveSeed, Rng } from '../util/rng';
import { type Qwen2Config, weightShapes } from './config';
import type { LayerAdapters } from './lean_layer';
import { additionalWeights, loraTargets, modules } from './lora_targets';

/** One adapted linear layer's pair: A float32 [r, in], B float32 [out, r]. */
interface AdapterPair {
  a: tf.Variable;
  b: tf.Variable;
}

/**
 * The adapters of one model: a pair per target module with PEFT's scaling alpha / r, and a trained copy of each
 * additional_target weight (PEFT's modules_to_save: the model's own weight stays as it was, for the reference).
 */
export class LoraAdapters {
  readonly scale: number;
  private disposed = false;

  private constructor(
    readonly settings: LoraSettings,
    private readonly pairs: Map<string, AdapterPair>,
    private readonly copies: Map<string, tf.Variable>,
  ) {
    this.scale = settings.alpha / settings.rank;
  }

  /**
   * Fresh adapters on the target modules, as PEFT initialises them: A uniform in +-1/sqrt(in) (kaiming_uniform with
   * a = sqrt(5)) from the stream (seed, 'lora-init', module), B zero.
   */
  static init(cfg: Qwen2Config, settings: LoraSettings, seed: number, base: (name: string) => tf.Tensor): LoraAdapters {
    const shapes = modules(cfg);
    const copies = new Map(additionalWeights(cfg, settings.additional).map((name) => [name, variableOf(() => tf.clone(base(name)), name)]));
    const pairs = new Map<string, AdapterPair>();
    for (const module of loraTargets(cfg, settings.target)) {
      const [out, inDim] = shapes.get(module) as number[];
      const rng = new Rng(seed, 'lora-init', module);
      const bound = 1 / Math.sqrt(inDim);
      const a = new Float32Array(settings.rank * inDim);
      for (let i = 0; i < a.length; i++) a[i] = (2 * rng.next() - 1) * bound;
      pairs.set(module, {
        a: variableOf(() => tf.tensor2d(a, [settings.rank, inDim]), `${module}.lora_A.weight`),
        b: variableOf(() => tf.zeros([out, settings.rank]), `${module}.lora_B.weight`),
      });
    }
    return new LoraAdapters(settings, pairs, copies);
  }

  /**
   * Adapters from named tensors (`<module>.lora_A.weight`, `<module>.lora_B.weight` and the additional weights' HF
   * names, as `variables` names them), copied and cast to float32 (the caller keeps the map).
   * @throws Error naming a missing or misshapen tensor, or one that is not an adapter of the target modules
   */
  static fromNamedTensors(cfg: Qwen2Config, settings: LoraSettings, tensors: Map<string, tf.Tensor>): LoraAdapters {
    const shapes = modules(cfg);
    const targets = loraTargets(cfg, settings.target);
    const additional = additionalWeights(cfg, settings.additional);
    const expected = new Set([...targets.flatMap((m) => [`${m}.lora_A.weight`, `${m}.lora_B.weight`]), ...additional]);
    const stray = [...tensors.keys()].find((name) => !expected.has(name));
    if (stray)
      throw new Error(`adapter tensor ${stray} is not an adapter of the target modules (${targets.length} modules, rank ${settings.rank})`);
    const pairs = new Map<string, AdapterPair>();
    const copies = new Map<string, tf.Variable>();
    const weightShape = new Map(weightShapes(cfg));
    const take = (name: string, shape: number[]) => {
      const t = tensors.get(name);
      if (!t) throw new Error(`adapter tensor ${name} is missing (expected shape [${shape}])`);
      if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
        throw new Error(`adapter tensor ${name} has shape [${t.shape}], expected [${shape}]`);
      }
      return variableOf(() => tf.cast(t, 'float32'), name);
    };
    try {
      for (const module of targets) {
        const [out, inDim] = shapes.get(module) as number[];
        const a = take(`${module}.lora_A.weight`, [settings.rank, inDim]);
        try {
          pairs.set(module, { a, b: take(`${module}.lora_B.weight`, [out, settings.rank]) });
        } catch (err) {
          a.dispose();
          throw err;
        }
      }
      for (const name of additional) copies.set(name, take(name, weightShape.get(name) as number[]));
    } catch (err) {
      for (const p of pairs.values()) tf.dispose([p.a, p.b]);
      tf.dispose([...copies.values()]);
      throw err;
    }
    return new LoraAdapters(settings, pairs, copies);
  }

  /**
   * The adapters of the decoder layer of prefix `p` (`model.layers.<l>.`) as the lean layer takes them, or null when
   * that layer must run as plain ops: it trains copies of its own weights (additional_target), or its adapters'
   * inputs are dropped (lora_dropout in a training forward).
   */
  layerAdapters(p: string, dropoutSeed?: number): LayerAdapters | null {
    if ((this.settings.dropout > 0 && dropoutSeed !== undefined) || [...this.copies.keys()].some((n) => n.startsWith(p))) return null;
    const names = {
      q: 'self_attn.q_proj',
      k: 'self_attn.k_proj',
      v: 'self_attn.v_proj',
      o: 'self_attn.o_proj',
      gate: 'mlp.gate_proj',
      up: 'mlp.up_proj',
      down: 'mlp.down_proj',
    };
    const out: LayerAdapters = {};
    for (const [key, module] of Object.entries(names) as Array<[keyof LayerAdapters, string]>) {
      const pair = this.pairs.get(`${p}${module}`);
      if (pair) out[key] = { a: pair.a as tf.Tensor2D, b: pair.b as tf.Tensor2D, scale: this.scale };
    }
    return out;
  }

  /** Whether `module` (full name, e.g. model.layers.0.self_attn.q_proj) carries an adapter. */
  has(module: string): boolean {
    return this.pairs.has(module);
  }

  /** The adapted modules, in the model's weight order. */
  targets(): string[] {
    return [...this.pairs.keys()];
  }

  /**
   * What an update trains, by name: `<module>.lora_A.weight`, `<module>.lora_B.weight`, then the additional weights
   * under their HF names. The live variables.
   */
  variables(): Map<string, tf.Variable> {
    const out = new Map<string, tf.Variable>();
    for (const [module, p] of this.pairs) {
      out.set(`${module}.lora_A.weight`, p.a);
      out.set(`${module}.lora_B.weight`, p.b);
    }
    for (const [name, v] of this.copies) out.set(name, v);
    return out;
  }

  /** The trained copy of the base weight `name` (an additional_target's), or undefined. */
  copyOf(name: string): tf.Variable | undefined {
    return this.copies.get(name);
  }

  /**
   * The adapter's output for the input x [N, in] of `module`: scale * dropout(x) A^T B^T, float32 [N, out]. Dropout
   * (PEFT's nn.Dropout: zeroes, then scales by 1 / (1 - p)) only with a `dropoutSeed`, its mask drawn from the
   * seed and the module's name.
   */
  delta(x: tf.Tensor2D, module: string, dropoutSeed?: number): tf.Tensor2D {
    const p = this.pairs.get(module);
    if (!p) throw new Error(`LoraAdapters: module ${module} has no adapter`);
    const rate = this.settings.dropout;
    return tf.tidy(() => {
      const input = rate > 0 && dropoutSeed !== undefined ? tf.dropout(x, rate, undefined, deriveSeed(dropoutSeed, module)) : x;
      return tf.mul(tf.matMul(tf.matMul(input, p.a, false, true), p.b, false, true), this.scale) as tf.Tensor2D;
    });
  }

  /**
   * The adapters' outputs of modules whose projections are stacked along the output axis (q, k and v): float32
   * [N, sum(outs)], zeros where a module has no adapter; null when none of them has one.
   */
  stackedDelta(x: tf.Tensor2D, modules: readonly string[], outs: readonly number[], dropoutSeed?: number): tf.Tensor2D | null {
    if (!modules.some((m) => this.pairs.has(m))) return null;
    return tf.tidy(() =>
      tf.concat(
        modules.map((m, i) => (this.pairs.has(m) ? this.delta(x, m, dropoutSeed) : tf.zeros([x.shape[0], outs[i] as number]))),
        1,
      ),
    ) as tf.Tensor2D;
  }

  /** The merged weight of `module`: W + scale * B A (what PEFT's merge_and_unload writes), float32 [out, in]. */
  merged(module: string, w: tf.Tensor2D): tf.Tensor2D {
    const p = this.pairs.get(module);
    if (!p) throw new Error(`LoraAdapters: module ${module} has no adapter`);
    return tf.tidy(() => tf.add(w, tf.mul(tf.matMul(p.b, p.a), this.scale)) as tf.Tensor2D);
  }

  /**
   * The weights PEFT's merge_and_unload gives: `weights` (HF names) with W + scale * B A for every adapted module and
   * the trained copy of every additional weight. New tensors for those (the caller frees them), the others as given.
   */
  mergedInto(weights: Map<string, tf.Tensor>): Map<string, tf.Tensor> {
    const out = new Map(weights);
    for (const module of this.pairs.keys())
      out.set(`${module}.weight`, this.merged(module, weights.get(`${module}.weight`) as tf.Tensor2D));
    for (const [name, v] of this.copies) out.set(name, tf.clone(v));
    return out;
  }

  /** Frees the adapters. */
  dispose(): void {
    if (this.disposed) return;
    for (const p of this.pairs.values()) tf.dispose([p.a, p.b]);
    tf.dispose([...this.copies.values()]);
    this.pairs.clear();
    this.copies.clear();
    this.disposed = true;
  }
}

let uidCounter = 0;
/** A trainable variable made in a tidy, so the tensor whose data it shares goes with it (as qwen2.ts makes them). */
function variableOf(init: () => tf.Tensor, name: string): tf.Variable {
  return tf.tidy(() => tf.variable(init(), true, `${name}#lora${++uidCounter}`));
}
