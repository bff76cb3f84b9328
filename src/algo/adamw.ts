/**
 * The optimizer of the update (docs/numerics.md §6: global grad-norm clip, then AdamW, at the learning rate of the
 * schedule). AdamW (Loshchilov & Hutter 2019) as torch.optim.AdamW computes it, eps 1e-8 as in ROLL:
 *   p <- p * (1 - lr * wd);  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
 *   p <- p - (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * Parameters are tf.Variables keyed by HF weight name; state (step, m, v) round-trips through optimizer.safetensors.
 */
import * as tf from '@tensorflow/tfjs';
import type { StreamedObject } from '../contract';
import { type DecodedSafetensors, decodeSafetensors, type SafeTensor, safetensorsStreamOf, streamedBytes } from '../model/hf/safetensors';

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

/** Gradients by HF weight name: float32 tensors, or their values in host memory. */
export type GradMap = Map<string, tf.Tensor | Float32Array> | Record<string, tf.Tensor | Float32Array>;

/** The gradients' values in host memory (a tensor's are copied out once). */
function hostEntries(g: GradMap): Array<[string, Float32Array]> {
  return (g instanceof Map ? [...g.entries()] : Object.entries(g)).map(([k, x]) => [
    k,
    x instanceof Float32Array ? x : (x.dataSync() as Float32Array),
  ]);
}

/** Default decay rule: no decay for biases and norm weights. */
export function defaultDecayFilter(name: string): boolean {
  return !(name.endsWith('.bias') || name.endsWith('norm.weight'));
}

/**
 * Global L2 norm clip (torch.nn.utils.clip_grad_norm_): norm = sqrt(sum_i ||g_i||^2); when norm > maxNorm every
 * gradient is to be scaled by maxNorm / (norm + 1e-6), which `AdamW.applyGradients` does as it reads them. A
 * non-finite norm is reported and the scale is 1 (the caller should skip the step).
 * @param grads gradients (float32, any shapes); not disposed
 * @param maxNorm > 0 (Infinity = never clip)
 * @returns the PRE-clip norm (summed in float64) and the scale
 * @throws RangeError when maxNorm is not > 0.
 */
export function clipByGlobalNorm(grads: GradMap, maxNorm: number): { norm: number; scale: number } {
  if (!(maxNorm > 0)) throw new RangeError(`clipByGlobalNorm: maxNorm = ${maxNorm}; allowed: a number > 0 (Infinity = no clip)`);
  let sum = 0;
  for (const [, g] of hostEntries(grads)) sum += sumOfSquares(g);
  const norm = Math.sqrt(sum);
  return { norm, scale: Number.isFinite(norm) && norm > maxNorm ? maxNorm / (norm + 1e-6) : 1 };
}

/** sum(g^2) in float64, in four interleaved partial sums (a single running sum waits on each addition). */
function sumOfSquares(g: Float32Array): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  const n4 = g.length - (g.length % 4);
  for (let i = 0; i < n4; i += 4) {
    s0 += g[i] * g[i];
    s1 += g[i + 1] * g[i + 1];
    s2 += g[i + 2] * g[i + 2];
    s3 += g[i + 3] * g[i + 3];
  }
  for (let i = n4; i < g.length; i++) s0 += g[i] * g[i];
  return s0 + s1 + s2 + s3;
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

/**
 * AdamW over named tf.Variables. The moments live in host memory and each parameter is updated in one pass over
 * its elements, in float64 with one rounding to float32 per stored value: as tensors, the update is about ten
 * elementwise kernels, each reading and writing a tensor the size of the parameter (a 136M-entry embedding makes
 * that seconds and gigabytes of transients). It agrees with torch.optim.AdamW within float32 rounding.
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
   * @param gradScale the gradients are multiplied by it first (the clip's scale)
   * @throws Error when no parameters are known, a gradient has no parameter of that name, or sizes differ;
   *   RangeError when lr is negative or not finite.
   */
  applyGradients(grads: GradMap, lr: number, params?: Map<string, tf.Variable>, gradScale = 1): void {
    const vars = params ?? this.params;
    if (!vars) throw new Error('AdamW.applyGradients: no parameters; pass them as the third argument or bind() them');
    if (!(lr >= 0 && Number.isFinite(lr))) throw new RangeError(`AdamW.applyGradients: lr = ${lr}; allowed: a finite number >= 0`);
    const list = hostEntries(grads);
    for (const [name, g] of list) {
      const p = vars.get(name);
      if (!p) throw new Error(`AdamW.applyGradients: gradient ${name} has no parameter of that name`);
      if (p.size !== g.length)
        throw new Error(`AdamW.applyGradients: gradient ${name} has ${g.length} values, parameter shape [${p.shape}]`);
    }
    this.step++;
    const t = this.step;
    const bc1 = 1 - this.beta1 ** t;
    const sqrtBc2 = Math.sqrt(1 - this.beta2 ** t);
    for (const [name, g] of list) {
      const p = vars.get(name) as tf.Variable;
      const decay = this.weightDecay > 0 && this.decayFilter(name) ? 1 - lr * this.weightDecay : 1;
      const old = this.moments.get(name);
      const m = old?.m ?? new Float32Array(g.length);
      const v = old?.v ?? new Float32Array(g.length);
      // The new values go over the host copy of the old ones (fresh memory is costly at this size); the cpu
      // backend hands out its own buffer, which a clone of the weights may share, so it gets a copy.
      const host = p.dataSync() as Float32Array;
      const values = tf.getBackend() === 'cpu' ? host.slice() : host;
      adamWLoop(g, values, m, v, {
        gradScale,
        beta1: this.beta1,
        beta2: this.beta2,
        decay,
        stepSize: lr / bc1,
        sqrtBc2,
        eps: this.eps,
      });
      this.moments.set(name, { shape: [...p.shape], m, v });
      const pNew = tf.tensor(values, p.shape, 'float32');
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

  /**
   * optimizer.safetensors, streamed from the moments as they are (no copy): F32 tensors `m.<name>`, `v.<name>`;
   * metadata step, betas, eps, weight_decay.
   */
  safetensors(): StreamedObject {
    const tensors: Record<string, SafeTensor> = {};
    for (const [name, { shape, m, v }] of this.moments) {
      tensors[`m.${name}`] = { dtype: 'F32', shape, data: m };
      tensors[`v.${name}`] = { dtype: 'F32', shape, data: v };
    }
    return safetensorsStreamOf(tensors, {
      step: String(this.step),
      betas: JSON.stringify([this.beta1, this.beta2]),
      eps: String(this.eps),
      weight_decay: String(this.weightDecay),
    });
  }

  /** safetensors()'s bytes in one buffer. */
  async toSafetensors(): Promise<Uint8Array> {
    return streamedBytes(this.safetensors());
  }

  /** Rebuilds an optimizer from optimizer.safetensors bytes (see fromTensors). */
  static fromSafetensors(bytes: Uint8Array, opts: AdamWOptions = {}): AdamW {
    return AdamW.fromTensors(decodeSafetensors(bytes), opts);
  }

  /**
   * Rebuilds an optimizer from decoded optimizer.safetensors, taking its arrays as the moments (no copy: the
   * caller hands them over); hyper-parameters come from `opts` (the checkpoint's trainer state), defaulting to the
   * file's metadata.
   * @throws Error when the file is malformed or its step metadata is missing.
   */
  static fromTensors({ tensors, metadata }: DecodedSafetensors, opts: AdamWOptions = {}): AdamW {
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
    const names = new Set<string>();
    for (const key of Object.keys(tensors)) {
      if (!key.startsWith('m.') && !key.startsWith('v.')) throw new Error(`AdamW.fromSafetensors: tensor ${key} is neither m.* nor v.*`);
      names.add(key.slice(2));
    }
    for (const name of names) {
      const m = tensors[`m.${name}`];
      const v = tensors[`v.${name}`];
      if (!m || !v) throw new Error(`AdamW.fromSafetensors: ${m ? `v.${name}` : `m.${name}`} is missing (each parameter has both moments)`);
      if (m.dtype !== 'F32' || v.dtype !== 'F32')
        throw new Error(`AdamW.fromSafetensors: moments of ${name} are ${m.dtype}/${v.dtype}; allowed: F32`);
      opt.moments.set(name, { shape: [...m.shape], m: m.data as Float32Array, v: v.data as Float32Array });
    }
    return opt;
  }

  /** Frees the moments (not the parameters). */
  dispose(): void {
    this.moments.clear();
  }
}

/**
 * The AdamW update of one parameter's values p, in place on p, m and v. Zero moments (a first step) give the same
 * values as the formula: b * 0 + x is x.
 */
function adamWLoop(
  g: Float32Array,
  p: Float32Array,
  m: Float32Array,
  v: Float32Array,
  c: { gradScale: number; beta1: number; beta2: number; decay: number; stepSize: number; sqrtBc2: number; eps: number },
): void {
  const { gradScale, beta1, beta2, decay, stepSize, sqrtBc2, eps } = c;
  const c1 = 1 - beta1;
  const c2 = 1 - beta2;
  for (let i = 0; i < g.length; i++) {
    const gi = g[i] * gradScale;
    const mi = m[i] * beta1 + gi * c1;
    const vi = v[i] * beta2 + gi * gi * c2;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay - (mi / (Math.sqrt(vi) / sqrtBc2 + eps)) * stepSize;
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
