/**
 * LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models") as Hugging Face PEFT applies it to a
 * linear layer: y = x W^T + b + (alpha / r) * x A^T B^T, with A [r, in] drawn as PEFT's kaiming_uniform(a = sqrt(5))
 * (uniform in +-1/sqrt(in)) and B [out, r] zero, so a fresh adapter leaves the model unchanged. The base weights
 * stay frozen; the adapters (and the `additional_target` modules, PEFT's modules_to_save) are what an update trains.
 * Targets follow ROLL's lora_target: module names matched as PEFT matches them (the whole name or its last
 * components), `all` for every linear layer of the decoder, or a regular expression over whole module names.
 */
import * as tf from '@tensorflow/tfjs';
import type { LoraSettings } from '../contract';
import { deriveSeed, Rng } from '../util/rng';
import { type Qwen2Config, weightShapes } from './config';

/** The names of the linear layers LoRA may adapt (`all`): every linear of every decoder layer, not lm_head. */
const DECODER_LINEARS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;

/** The modules of a model: every weight's name without its last component (`.weight` / `.bias`), with the weight's shape. */
function modules(cfg: Qwen2Config): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const [name, shape] of weightShapes(cfg)) {
    const module = name.slice(0, name.lastIndexOf('.'));
    if (name.endsWith('.weight')) out.set(module, shape);
  }
  return out;
}

/** PEFT's match of a target name against a module name: the whole name, or its trailing dotted components. */
const namesModule = (target: string, module: string) => module === target || module.endsWith(`.${target}`);

/** The decoder's linear modules, by full name: `model.layers.<l>.self_attn.q_proj` ... `mlp.down_proj`. */
function decoderLinears(cfg: Qwen2Config): string[] {
  return [...modules(cfg).keys()].filter((m) => DECODER_LINEARS.some((l) => m.endsWith(`.${l}`)));
}

/**
 * The linear modules lora_target adapts, by full name, in the model's weight order.
 * @throws Error naming the target that matches no adaptable module, and what is allowed
 */
export function loraTargets(cfg: Qwen2Config, target: LoraSettings['target']): string[] {
  const linears = decoderLinears(cfg);
  const allowed = `allowed: all, a comma list of ${DECODER_LINEARS.join(', ')} (or longer dotted names such as self_attn.q_proj or model.layers.0.mlp.up_proj), or a regular expression matching whole names of those modules`;
  if (target.kind === 'regex') {
    let re: RegExp;
    try {
      re = new RegExp(`^(?:${target.pattern})$`);
    } catch (err) {
      throw new Error(`"${target.pattern}" is not a valid regular expression (${(err as Error).message}); ${allowed}`);
    }
    const hit = linears.filter((m) => re.test(m));
    if (hit.length === 0) throw new Error(`"${target.pattern}" matches no linear layer of the decoder; ${allowed}`);
    return hit;
  }
  if (target.names.length === 0) throw new Error(`names no module; ${allowed}`);
  const chosen = new Set<string>();
  for (const name of target.names) {
    const hit = name === 'all' ? linears : linears.filter((m) => namesModule(name, m));
    if (hit.length === 0) throw new Error(`"${name}" names no linear layer of the decoder; ${allowed}`);
    for (const m of hit) chosen.add(m);
  }
  return linears.filter((m) => chosen.has(m));
}

/**
 * The base weights (HF names) of the modules additional_target names, trained in full beside the adapters.
 * @throws Error naming the module name that matches no module of the model
 */
export function additionalWeights(cfg: Qwen2Config, names: readonly string[]): string[] {
  const all = weightShapes(cfg).map(([name]) => name);
  const out = new Set<string>();
  for (const target of names) {
    const hit = all.filter((w) => namesModule(target, w.slice(0, w.lastIndexOf('.'))));
    if (hit.length === 0) {
      const kinds = [...new Set([...modules(cfg).keys()].map((m) => m.split('.').pop()))].join(', ');
      throw new Error(`"${target}" names no module of the model; allowed: module names such as ${kinds}`);
    }
    for (const w of hit) out.add(w);
  }
  return all.filter((w) => out.has(w));
}

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
