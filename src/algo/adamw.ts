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

/** A parameter's first and second moments (float32, host memory, row-major in the parameter's shape). */
export interface Moments {
  shape: number[];
  m: Float32Array;
  v: Float32Array;
}

/** Optimizer state: step count and moments by parameter name. */
export interface AdamWState {
  step: number;
  moments: Map<string, Moments>;
}

const f32 = Math.fround;

/**
 * AdamW over named tf.Variables. The moments live in host memory and each parameter is updated in one pass over
 * its elements: as tensors, the update is about ten elementwise kernels, each reading and writing a tensor the
 * size of the parameter (a 136M-entry embedding makes that seconds and gigabytes of transients). Every operation
 * is rounded to float32 in the order torch and the tensor form use, so the results are the same float32 values.
 */
export class AdamW {
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;
  private readonly decayFilter: (name: string) => boolean;
  private params?: Map<string, tf.Variable>;
  private step = 0;
  private moments = new Map<string, Moments>();

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
    // The scalars as the tensor form sees them: float32 constants.
    const b1 = f32(this.beta1);
    const b2 = f32(this.beta2);
    const c1 = f32(1 - this.beta1);
    const c2 = f32(1 - this.beta2);
    const sqrtBc2 = f32(Math.sqrt(1 - this.beta2 ** t));
    const eps = f32(this.eps);
    const stepSize = f32(lr / (1 - this.beta1 ** t));
    for (const [name, g] of list) {
      const p = vars.get(name) as tf.Variable;
      const decay = this.weightDecay > 0 && this.decayFilter(name) ? f32(1 - lr * this.weightDecay) : 1;
      const gd = g.dataSync() as Float32Array;
      const pd = p.dataSync() as Float32Array;
      const n = gd.length;
      const old = this.moments.get(name);
      const mOld = old?.m;
      const vOld = old?.v;
      const m = mOld ?? new Float32Array(n);
      const v = vOld ?? new Float32Array(n);
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        const gi = gd[i];
        // A parameter's first step starts from zero moments: b * 0 + x is exactly x.
        const gTerm = f32(gi * c1);
        const g2Term = f32(f32(gi * gi) * c2);
        const mi = mOld ? f32(f32(m[i] * b1) + gTerm) : gTerm;
        const vi = vOld ? f32(f32(v[i] * b2) + g2Term) : g2Term;
        m[i] = mi;
        v[i] = vi;
        const base = decay === 1 ? pd[i] : f32(pd[i] * decay);
        const denom = f32(f32(f32(Math.sqrt(vi)) / sqrtBc2) + eps);
        out[i] = f32(base - f32(f32(mi / denom) * stepSize));
      }
      this.moments.set(name, { shape: [...p.shape], m, v });
      const pNew = tf.tensor(out, p.shape, 'float32');
      p.assign(pNew);
      pNew.dispose();
    }
  }

  /** The live state (step, moments by name); do not modify the arrays. */
  state(): AdamWState {
    return { step: this.step, moments: new Map(this.moments) };
  }

  /** Replaces the state with copies of the given arrays. @throws RangeError when step is not an integer >= 0. */
  loadState(state: AdamWState): void {
    if (!Number.isInteger(state.step) || state.step < 0)
      throw new RangeError(`AdamW.loadState: step = ${state.step}; allowed: integer >= 0`);
    this.step = state.step;
    this.moments = new Map([...state.moments].map(([k, x]) => [k, { shape: [...x.shape], m: x.m.slice(), v: x.v.slice() }]));
  }

  /** optimizer.safetensors bytes: F32 tensors `m.<name>`, `v.<name>`; metadata step, betas, eps, weight_decay. */
  async toSafetensors(): Promise<Uint8Array> {
    const tensors: Record<string, SafeTensor> = {};
    for (const [name, { shape, m, v }] of this.moments) {
      tensors[`m.${name}`] = { dtype: 'F32', shape, data: m };
      tensors[`v.${name}`] = { dtype: 'F32', shape, data: v };
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
    for (const key of Object.keys(tensors)) {
      if (!key.startsWith('m.') && !key.startsWith('v.')) throw new Error(`AdamW.fromSafetensors: tensor ${key} is neither m.* nor v.*`);
      const name = key.slice(2);
      const m = tensors[`m.${name}`];
      const v = tensors[`v.${name}`];
      if (!m || !v) throw new Error(`AdamW.fromSafetensors: ${m ? `v.${name}` : `m.${name}`} is missing (each parameter has both moments)`);
      if (m.dtype !== 'F32' || v.dtype !== 'F32')
        throw new Error(`AdamW.fromSafetensors: moments of ${name} are ${m.dtype}/${v.dtype}; allowed: F32`);
      opt.moments.set(name, {
        shape: [...m.shape],
        m: new Float32Array(m.data as Float32Array),
        v: new Float32Array(v.data as Float32Array),
      });
    }
    return opt;
  }

  /** Frees the moments (not the parameters). */
  dispose(): void {
    this.moments.clear();
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
