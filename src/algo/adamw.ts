/**
 * The optimizer of the update (docs/numerics.md §6: global grad-norm clip, then AdamW, at the learning rate of the
 * schedule). AdamW (Loshchilov & Hutter 2019) as torch.optim.AdamW computes it, eps 1e-8 as in ROLL:
 *   p <- p * (1 - lr * wd);  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
 *   p <- p - (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * Parameters are tf.Variables keyed by HF weight name; state (step, m, v) round-trips through optimizer.safetensors.
 */
import * as tf from '@tensorflow/tfjs';
import { decodeSafetensors, encodeSafetensors, type SafeTensor } from '../model/hf/safetensors';

/** AdamW hyper-parameters. */
export interface AdamWOptions {
  /** (beta1, beta2), each in [0, 1). Default [0.9, 0.999]. */
  betas?: [number, number];
  /** Denominator epsilon (> 0). Default 1e-8. */
  eps?: number;
  /** Decoupled weight decay coefficient (>= 0). Default 0. */
  weightDecay?: number;
  /**
   * Which parameters get weight decay. Default: all except biases and norm weights (names ending in '.bias' or
   * 'norm.weight'), the HF Trainer rule.
   */
  decayFilter?: (name: string) => boolean;
  /** Parameters to update by default (may also be given per applyGradients call). */
  params?: Map<string, tf.Variable>;
}

/** Gradients by HF weight name. */
export type GradMap = Map<string, tf.Tensor> | Record<string, tf.Tensor>;

function entries(g: GradMap): Array<[string, tf.Tensor]> {
  return g instanceof Map ? [...g.entries()] : Object.entries(g);
}

/** Default decay rule: no decay for biases and norm weights. */
export function defaultDecayFilter(name: string): boolean {
  return !(name.endsWith('.bias') || name.endsWith('norm.weight'));
}

/**
 * Global L2 norm clip (torch.nn.utils.clip_grad_norm_): norm = sqrt(sum_i ||g_i||^2); when norm > maxNorm every
 * gradient is scaled by maxNorm / (norm + 1e-6). A non-finite norm is reported and nothing is scaled (the caller
 * should skip the step).
 * @param grads gradients (float32, any shapes); not disposed
 * @param maxNorm > 0 (Infinity = never clip)
 * @returns new gradient tensors (caller disposes) and the PRE-clip norm as a number
 * @throws RangeError when maxNorm is not > 0.
 */
export function clipByGlobalNorm(grads: GradMap, maxNorm: number): { grads: Map<string, tf.Tensor>; norm: number } {
  if (!(maxNorm > 0)) throw new RangeError(`clipByGlobalNorm: maxNorm = ${maxNorm}; allowed: a number > 0 (Infinity = no clip)`);
  const list = entries(grads);
  const norm =
    list.length === 0 ? 0 : Math.sqrt(tf.tidy(() => tf.addN(list.map(([, g]) => tf.sum(tf.square(tf.cast(g, 'float32'))))).dataSync()[0]));
  const out = new Map<string, tf.Tensor>();
  const scale = Number.isFinite(norm) && norm > maxNorm ? maxNorm / (norm + 1e-6) : 1;
  for (const [name, g] of list) out.set(name, scale === 1 ? tf.clone(g) : tf.mul(g, scale));
  return { grads: out, norm };
}

/** Optimizer state: step count and first/second moments by parameter name. */
export interface AdamWState {
  step: number;
  m: Map<string, tf.Tensor>;
  v: Map<string, tf.Tensor>;
}

/** AdamW over named tf.Variables. Call dispose() to free the moment tensors. */
export class AdamW {
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;
  private readonly decayFilter: (name: string) => boolean;
  private params?: Map<string, tf.Variable>;
  private step = 0;
  private m = new Map<string, tf.Tensor>();
  private v = new Map<string, tf.Tensor>();

  /** @throws RangeError naming a hyper-parameter outside its allowed range. */
  constructor(opts: AdamWOptions = {}) {
    const [b1, b2] = opts.betas ?? [0.9, 0.999];
    for (const [k, x] of [
      ['betas[0]', b1],
      ['betas[1]', b2],
    ] as const) {
      if (!(x >= 0 && x < 1)) throw new RangeError(`AdamW: ${k} = ${x}; allowed: [0, 1)`);
    }
    const eps = opts.eps ?? 1e-8;
    if (!(eps > 0)) throw new RangeError(`AdamW: eps = ${eps}; allowed: > 0`);
    const wd = opts.weightDecay ?? 0;
    if (!(wd >= 0)) throw new RangeError(`AdamW: weightDecay = ${wd}; allowed: >= 0`);
    this.beta1 = b1;
    this.beta2 = b2;
    this.eps = eps;
    this.weightDecay = wd;
    this.decayFilter = opts.decayFilter ?? defaultDecayFilter;
    this.params = opts.params;
  }

  /** Binds the parameters updated when applyGradients gets none. */
  bind(params: Map<string, tf.Variable>): void {
    this.params = params;
  }

  /** Number of steps taken (the t of the bias correction). */
  get stepCount(): number {
    return this.step;
  }

  /**
   * One AdamW step for every named gradient.
   * @param grads float32 gradients by parameter name (not disposed)
   * @param lr learning rate (>= 0)
   * @param params the variables to update (default: those bound via options.params / bind())
   * @throws Error when no parameters are known, a gradient has no parameter of that name, or shapes differ;
   *   RangeError when lr is negative or not finite.
   */
  applyGradients(grads: GradMap, lr: number, params?: Map<string, tf.Variable>): void {
    const vars = params ?? this.params;
    if (!vars) throw new Error('AdamW.applyGradients: no parameters; pass them as the third argument or bind() them');
    if (!(lr >= 0 && Number.isFinite(lr))) throw new RangeError(`AdamW.applyGradients: lr = ${lr}; allowed: a finite number >= 0`);
    const list = entries(grads);
    for (const [name, g] of list) {
      const p = vars.get(name);
      if (!p) throw new Error(`AdamW.applyGradients: gradient ${name} has no parameter of that name`);
      if (p.shape.join(',') !== g.shape.join(',')) {
        throw new Error(`AdamW.applyGradients: gradient ${name} shape [${g.shape}] != parameter shape [${p.shape}]`);
      }
    }
    this.step++;
    const t = this.step;
    const bc1 = 1 - this.beta1 ** t;
    const bc2 = 1 - this.beta2 ** t;
    for (const [name, g] of list) {
      const p = vars.get(name) as tf.Variable;
      const mOld = this.m.get(name);
      const vOld = this.v.get(name);
      const [mNew, vNew, pNew] = tf.tidy(() => {
        // A parameter's first step starts from zero moments: b * 0 + x is exactly x, so the zeros are skipped.
        const gTerm = tf.mul(g, 1 - this.beta1);
        const g2Term = tf.mul(tf.square(g), 1 - this.beta2);
        const m = mOld ? tf.add(tf.mul(mOld, this.beta1), gTerm) : gTerm;
        const v = vOld ? tf.add(tf.mul(vOld, this.beta2), g2Term) : g2Term;
        const decay = this.weightDecay > 0 && this.decayFilter(name) ? 1 - lr * this.weightDecay : 1;
        const base = decay === 1 ? p : tf.mul(p, decay);
        const denom = tf.add(tf.div(tf.sqrt(v), Math.sqrt(bc2)), this.eps);
        const upd = tf.sub(base, tf.mul(tf.div(m, denom), lr / bc1));
        return [m, v, upd];
      });
      p.assign(pNew);
      pNew.dispose();
      mOld?.dispose();
      vOld?.dispose();
      this.m.set(name, mNew);
      this.v.set(name, vNew);
    }
  }

  /** The live state (step, m, v by name); do not dispose the tensors. */
  stateTensors(): AdamWState {
    return { step: this.step, m: new Map(this.m), v: new Map(this.v) };
  }

  /** Replaces the state with copies of the given tensors. @throws RangeError when step is not an integer >= 0. */
  loadState(state: AdamWState): void {
    if (!Number.isInteger(state.step) || state.step < 0)
      throw new RangeError(`AdamW.loadState: step = ${state.step}; allowed: integer >= 0`);
    this.disposeState();
    this.step = state.step;
    for (const [k, t] of state.m) this.m.set(k, tf.clone(t));
    for (const [k, t] of state.v) this.v.set(k, tf.clone(t));
  }

  /** optimizer.safetensors bytes: F32 tensors `m.<name>`, `v.<name>`; metadata step, betas, eps, weight_decay. */
  async toSafetensors(): Promise<Uint8Array> {
    const tensors: Record<string, SafeTensor> = {};
    for (const [prefix, map] of [
      ['m', this.m],
      ['v', this.v],
    ] as const) {
      for (const [name, t] of map)
        tensors[`${prefix}.${name}`] = { dtype: 'F32', shape: [...t.shape], data: (await t.data()) as Float32Array };
    }
    return encodeSafetensors(tensors, {
      step: String(this.step),
      betas: JSON.stringify([this.beta1, this.beta2]),
      eps: String(this.eps),
      weight_decay: String(this.weightDecay),
    });
  }

  /**
   * Rebuilds an optimizer from optimizer.safetensors bytes; hyper-parameters come from `opts` (the checkpoint's
   * trainer state), defaulting to the file's metadata.
   * @throws Error when the file is malformed or its step metadata is missing.
   */
  static fromSafetensors(bytes: Uint8Array, opts: AdamWOptions = {}): AdamW {
    const { tensors, metadata } = decodeSafetensors(bytes);
    const step = Number(metadata.step);
    if (!Number.isInteger(step) || step < 0)
      throw new Error(`AdamW.fromSafetensors: metadata step = ${JSON.stringify(metadata.step)} is not an integer >= 0`);
    const opt = new AdamW({
      betas: opts.betas ?? (metadata.betas ? (JSON.parse(metadata.betas) as [number, number]) : undefined),
      eps: opts.eps ?? (metadata.eps ? Number(metadata.eps) : undefined),
      weightDecay: opts.weightDecay ?? (metadata.weight_decay ? Number(metadata.weight_decay) : undefined),
      decayFilter: opts.decayFilter,
      params: opts.params,
    });
    opt.step = step;
    for (const [key, t] of Object.entries(tensors)) {
      const dot = key.indexOf('.');
      const which = key.slice(0, dot);
      const name = key.slice(dot + 1);
      if (which !== 'm' && which !== 'v') throw new Error(`AdamW.fromSafetensors: tensor ${key} is neither m.* nor v.*`);
      (which === 'm' ? opt.m : opt.v).set(name, tf.tensor(t.data as Float32Array, t.shape, 'float32'));
    }
    return opt;
  }

  private disposeState(): void {
    for (const t of this.m.values()) t.dispose();
    for (const t of this.v.values()) t.dispose();
    this.m.clear();
    this.v.clear();
  }

  /** Frees the moment tensors (not the parameters). */
  dispose(): void {
    this.disposeState();
  }
}

// Learning-rate schedules of actor_train.training_args (docs/numerics.md §2, §6): linear warmup over warmup_steps,
// then constant, linear decay to 0, or cosine decay to 0 at total steps (HF transformers
// get_{constant,linear,cosine}_schedule_with_warmup, as ROLL uses them).

/** Schedule settings; steps count optimizer steps. */
export interface LrSchedule {
  /** learning_rate (>= 0). */
  base: number;
  /** lr_scheduler_type. */
  type: 'constant' | 'linear' | 'cosine';
  /** warmup_steps (>= 0). */
  warmupSteps: number;
  /** Steps at which linear / cosine reach 0 (>= 0). */
  totalSteps: number;
}

/**
 * The learning rate at step `step` (0-based), as HF's LambdaLR factors times base:
 * step < warmupSteps: base * step / warmupSteps (0 at step 0); then constant: base; linear: base * (1 - p);
 * cosine: base * 0.5 * (1 + cos(pi p)), with p = min(1, (step - warmupSteps) / max(1, totalSteps - warmupSteps)).
 * Past totalSteps the rate stays 0 (HF's cosine would rise again; clamping p avoids it).
 * @returns the learning rate (same units as base)
 * @throws RangeError on a negative or non-finite base, step, warmupSteps or totalSteps.
 */
export function lrAt(s: LrSchedule, step: number): number {
  for (const [name, v] of [
    ['learning_rate', s.base],
    ['warmup_steps', s.warmupSteps],
    ['total steps', s.totalSteps],
    ['step', step],
  ] as const) {
    if (!(v >= 0 && Number.isFinite(v))) throw new RangeError(`lrAt: ${name} = ${v}; allowed: a finite number >= 0`);
  }
  if (step < s.warmupSteps) return (s.base * step) / s.warmupSteps;
  if (s.type === 'constant') return s.base;
  const span = Math.max(1, s.totalSteps - s.warmupSteps);
  const progress = Math.min(1, (step - s.warmupSteps) / span);
  if (s.type === 'linear') return s.base * (1 - progress);
  return s.base * 0.5 * (1 + Math.cos(Math.PI * progress));
}
