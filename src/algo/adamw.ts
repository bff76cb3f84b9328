/**
 * The optimizer of the update (docs/numerics.md §6: global grad-norm clip, then AdamW, at the learning rate of the
 * schedule). AdamW (Loshchilov & Hutter 2019) as torch.optim.AdamW computes it, eps 1e-8 as in ROLL:
 *   p <- p * (1 - lr * wd);  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
 *   p <- p - (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * Parameters are tf.Variables keyed by HF weight name. The moments are tensors on the backend that holds the
 * weights and a step is elementwise tf kernels there: on a GPU nothing parameter-sized crosses to the host, and
 * native TensorFlow spreads each kernel over the CPU's cores. Only the gradient norm (a scalar) is read back, for
 * the metric and the non-finite skip. State (step, m, v) round-trips through optimizer.safetensors.
 */
import * as tf from '@tensorflow/tfjs';
import type { StreamedObject } from '../contract';
import { decodeSafetensors, streamedBytes } from '../model/hf/safetensors';
import { type BackendSafetensors, tensorOnBackend, tensorsSafetensors } from '../model/hf/weights';
import { sumAll } from '../model/long_sum';

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

/** Gradients by HF weight name: float32 tensors, or values in host memory (uploaded once, for tests and small callers). */
export type GradMap = Map<string, tf.Tensor | Float32Array> | Record<string, tf.Tensor | Float32Array>;

/** The entries of a GradMap. */
function entriesOf(g: GradMap): Array<[string, tf.Tensor | Float32Array]> {
  return g instanceof Map ? [...g.entries()] : Object.entries(g);
}

/** The gradients as tensors: host arrays are uploaded in `shapeOf(name)` (1-D without it) and listed in `uploaded`. */
function asTensors(
  entries: Array<[string, tf.Tensor | Float32Array]>,
  shapeOf?: (name: string) => number[],
): { list: Array<[string, tf.Tensor]>; uploaded: tf.Tensor[] } {
  const uploaded: tf.Tensor[] = [];
  const list = entries.map(([k, x]): [string, tf.Tensor] => {
    if (!(x instanceof Float32Array)) return [k, x];
    const t = tf.tensor(x, shapeOf?.(k) ?? [x.length], 'float32');
    uploaded.push(t);
    return [k, t];
  });
  return { list, uploaded };
}

/** Default decay rule: no decay for biases and norm weights. */
export function defaultDecayFilter(name: string): boolean {
  return !(name.endsWith('.bias') || name.endsWith('norm.weight'));
}

/**
 * Global L2 norm clip as torch.nn.utils.clip_grad_norm_: norm = ||(||g_1||, ..., ||g_n||)||, computed by the backend
 * that holds the gradients (float32); every gradient is to be scaled by min(1, maxNorm / (norm + 1e-6)), which
 * `AdamW.applyGradients` does as it reads each one (its gradScale). Only the norm is read to the host. A non-finite
 * norm is reported and the scale is 1 (the caller should skip the step).
 * @param grads gradients (float32, any shapes); not disposed
 * @param maxNorm > 0 (Infinity = never clip)
 * @returns the pre-clip norm and the scale
 * @throws RangeError when maxNorm is not > 0.
 */
export function clipByGlobalNorm(grads: GradMap, maxNorm: number): { norm: number; scale: number } {
  if (!(maxNorm > 0)) throw new RangeError(`clipByGlobalNorm: maxNorm = ${maxNorm}; allowed: a number > 0 (Infinity = no clip)`);
  const { list, uploaded } = asTensors(entriesOf(grads));
  try {
    if (list.length === 0) return { norm: 0, scale: 1 };
    // One norm per gradient (its square freed before the next is made), then the norm of the norms: torch's order.
    const l2 = (x: tf.Tensor) => tf.sqrt(sumAll(tf.square(x)));
    const total = tf.tidy(() => l2(tf.stack(list.map(([, g]) => tf.tidy(() => l2(g))))));
    const norm = total.dataSync()[0];
    total.dispose();
    return { norm, scale: Number.isFinite(norm) ? Math.min(1, maxNorm / (norm + 1e-6)) : 1 };
  } finally {
    tf.dispose(uploaded);
  }
}

/** A parameter's moments on the backend. */
interface DeviceMoments {
  m: tf.Tensor;
  v: tf.Tensor;
}

/** The scalars of one step, uploaded once per step (a few bytes each). */
interface StepScalars {
  /** The clip's scale, or null when it is 1 (no kernel then). */
  scale: tf.Scalar | null;
  /** 1 - b1: the weight of torch's lerp_ of m towards g. */
  mWeight: tf.Scalar;
  beta2: tf.Scalar;
  /** 1 - b2. */
  vWeight: tf.Scalar;
  /** sqrt(1 - b2^t). */
  sqrtBc2: tf.Scalar;
  eps: tf.Scalar;
  /** lr / (1 - b1^t). */
  stepSize: tf.Scalar;
  /** 1 - lr * weight_decay, for the parameters that decay; null when nothing decays. */
  decay: tf.Scalar | null;
}

/** f(x), then x freed: the next kernel has read it. */
function freeing(x: tf.Tensor, f: (x: tf.Tensor) => tf.Tensor): tf.Tensor {
  const y = f(x);
  x.dispose();
  return y;
}

/** op(a, b), then both freed. */
function combineFreeing(a: tf.Tensor, b: tf.Tensor, op: (a: tf.Tensor, b: tf.Tensor) => tf.Tensor): tf.Tensor {
  const y = op(a, b);
  a.dispose();
  b.dispose();
  return y;
}

/** The variable takes y's buffer (no copy) and frees its old one. */
function assignFreeing(p: tf.Variable, y: tf.Tensor): void {
  p.assign(y);
  y.dispose();
}

/**
 * One parameter's AdamW update as tf kernels on the parameter's backend, in torch's order of operations (its
 * single-tensor AdamW, float32): the closer the order, the fewer last-bit differences, which a moment made of
 * terms of opposite signs magnifies. tfjs writes every result to a fresh buffer, so the kernels are ordered for
 * memory: each input is freed as soon as the kernel reading it last has run (a tf.tidy would keep them all to its
 * end), each old moment as soon as its new value exists, and the weight decay is applied to p (and the old p freed)
 * before the update's own temporaries are made. At most two parameter-sized temporaries exist at once beyond p, m, v
 * and g (three while the caller keeps a gradient that the clip scales).
 * @param release frees g once it is read
 * @returns the new moments (the old ones are freed)
 */
function updateParameter(
  p: tf.Variable,
  g: tf.Tensor,
  old: DeviceMoments | undefined,
  k: StepScalars,
  decays: boolean,
  release: boolean,
): DeviceMoments {
  // clip_grad_norm_ scales g in place; here the scaled copy replaces g when the caller gives g up.
  const gs = k.scale ? tf.mul(g, k.scale) : g;
  if (gs !== g && release) g.dispose();
  // m.lerp_(g, 1 - b1) = m + (1 - b1) (g - m); on the first step (m = 0) that is (1 - b1) g exactly.
  const m = old
    ? combineFreeing(
        old.m,
        freeing(tf.sub(gs, old.m), (d) => tf.mul(d, k.mWeight)),
        tf.add,
      )
    : tf.mul(gs, k.mWeight);
  // v.mul_(b2).addcmul_(g, g, 1 - b2); on the first step (1 - b2) g g. The old v goes before g g is made.
  const vDecayed = old ? freeing(old.v, (x) => tf.mul(x, k.beta2)) : null;
  const gg = freeing(tf.mul(gs, k.vWeight), (x) => tf.mul(x, gs));
  if (gs !== g || release) gs.dispose();
  const v = vDecayed ? combineFreeing(vDecayed, gg, tf.add) : gg;
  // p.mul_(1 - lr wd), its old buffer freed before the update's temporaries exist.
  if (decays && k.decay) assignFreeing(p, tf.mul(p, k.decay));
  // denom = sqrt(v) / sqrt(1 - b2^t) + eps; p.addcdiv_(m, denom, -lr / (1 - b1^t))
  const denom = freeing(
    freeing(tf.sqrt(v), (x) => tf.div(x, k.sqrtBc2)),
    (x) => tf.add(x, k.eps),
  );
  const delta = freeing(
    freeing(denom, (d) => tf.div(m, d)),
    (x) => tf.mul(x, k.stepSize),
  );
  assignFreeing(
    p,
    freeing(delta, (d) => tf.sub(p, d)),
  );
  return { m: tf.keep(m), v: tf.keep(v) };
}

/**
 * AdamW over named tf.Variables, its moments as tensors beside the weights (see the file's comment). It agrees with
 * torch.optim.AdamW within float32 rounding (test/fixtures/hf/adamw_*.json). Call dispose() to free the moments.
 */
export class AdamW {
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;
  private readonly decayFilter: (name: string) => boolean;
  private params?: Map<string, tf.Variable>;
  private step = 0;
  private moments = new Map<string, DeviceMoments>();

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
   * One AdamW step for every named gradient, on the backend of the parameters; reads nothing back to the host.
   * @param grads float32 gradients by parameter name (host arrays are uploaded in the parameter's shape)
   * @param lr learning rate (>= 0)
   * @param params the variables to update (default: those bound via options.params / bind())
   * @param gradScale the gradients are multiplied by it first (the clip's scale, >= 0)
   * @param release frees each gradient tensor once its parameter is updated (the caller gives them up). Parameters
   *   are updated smallest first, so the gradients already used are gone before the largest one's temporaries exist.
   * @throws Error when no parameters are known, a gradient has no parameter of that name, or shapes differ;
   *   RangeError when lr or gradScale is negative or not finite.
   */
  applyGradients(grads: GradMap, lr: number, params?: Map<string, tf.Variable>, gradScale = 1, release = false): void {
    const vars = params ?? this.params;
    if (!vars) throw new Error('AdamW.applyGradients: no parameters; pass them as the third argument or bind() them');
    if (!(lr >= 0 && Number.isFinite(lr))) throw new RangeError(`AdamW.applyGradients: lr = ${lr}; allowed: a finite number >= 0`);
    if (!(gradScale >= 0 && Number.isFinite(gradScale)))
      throw new RangeError(`AdamW.applyGradients: gradScale = ${gradScale}; allowed: a finite number >= 0`);
    const entries = entriesOf(grads);
    for (const [name, g] of entries) {
      const p = vars.get(name);
      if (!p) throw new Error(`AdamW.applyGradients: gradient ${name} has no parameter of that name`);
      const what =
        g instanceof Float32Array
          ? g.length === p.size
            ? null
            : `${g.length} values`
          : g.shape.join(',') === p.shape.join(',')
            ? null
            : `[${g.shape}]`;
      if (what) throw new Error(`AdamW.applyGradients: gradient ${name} is ${what}, parameter [${p.shape}]`);
      const m = this.moments.get(name)?.m;
      if (m && m.size !== p.size) throw new Error(`AdamW.applyGradients: moments of ${name} are [${m.shape}], parameter [${p.shape}]`);
    }
    const { list, uploaded } = asTensors(entries, (name) => (vars.get(name) as tf.Variable).shape);
    this.step++;
    const t = this.step;
    const s = (x: number) => tf.scalar(x, 'float32');
    const k: StepScalars = {
      scale: gradScale === 1 ? null : s(gradScale),
      mWeight: s(1 - this.beta1),
      beta2: s(this.beta2),
      vWeight: s(1 - this.beta2),
      sqrtBc2: s(Math.sqrt(1 - this.beta2 ** t)),
      eps: s(this.eps),
      stepSize: s(lr / (1 - this.beta1 ** t)),
      decay: this.weightDecay > 0 ? s(1 - lr * this.weightDecay) : null,
    };
    try {
      for (const [name, g] of [...list].sort((a, b) => a[1].size - b[1].size)) {
        const p = vars.get(name) as tf.Variable;
        const next = updateParameter(p, g, this.moments.get(name), k, this.decayFilter(name), release);
        this.moments.set(name, next);
      }
    } finally {
      tf.dispose([...uploaded, ...Object.values(k).filter((x): x is tf.Scalar => x !== null)]);
    }
  }

  /**
   * optimizer.safetensors, streamed: F32 tensors `m.<name>`, `v.<name>` read off the backend a row block at a time
   * as the stream is consumed (the host never holds the moments); metadata step, betas, eps, weight_decay.
   */
  safetensors(): StreamedObject {
    const named = new Map<string, tf.Tensor>();
    for (const [name, { m, v }] of this.moments) {
      named.set(`m.${name}`, m);
      named.set(`v.${name}`, v);
    }
    return tensorsSafetensors(named, {
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

  /** Rebuilds an optimizer from optimizer.safetensors bytes (see fromTensors). @throws Error also on moments that are not F32 */
  static fromSafetensors(bytes: Uint8Array, opts: AdamWOptions = {}): AdamW {
    const { tensors, metadata } = decodeSafetensors(bytes);
    for (const [key, t] of Object.entries(tensors))
      if (t.dtype !== 'F32') throw new Error(`AdamW.fromSafetensors: moment ${key} is ${t.dtype}; allowed: F32`);
    const uploaded = new Map(Object.entries(tensors).map(([key, t]) => [key, tensorOnBackend(t)]));
    try {
      return AdamW.fromTensors({ tensors: uploaded, metadata }, opts);
    } catch (err) {
      tf.dispose([...uploaded.values()]);
      throw err;
    }
  }

  /**
   * Rebuilds an optimizer from optimizer.safetensors's tensors on the backend, taking them as its moments (they are
   * the optimizer's once it returns; on a throw they stay the caller's); hyper-parameters come from `opts` (the
   * checkpoint's trainer state), defaulting to the file's metadata.
   * @throws Error when the file is malformed or its step metadata is missing.
   */
  static fromTensors({ tensors, metadata }: BackendSafetensors, opts: AdamWOptions = {}): AdamW {
    const step = Number(metadata.step);
    if (!Number.isInteger(step) || step < 0)
      throw new Error(`AdamW.fromSafetensors: metadata step = ${JSON.stringify(metadata.step)} is not an integer >= 0`);
    const names = new Set<string>();
    for (const key of tensors.keys()) {
      if (!key.startsWith('m.') && !key.startsWith('v.')) throw new Error(`AdamW.fromSafetensors: tensor ${key} is neither m.* nor v.*`);
      names.add(key.slice(2));
    }
    const moments = new Map<string, DeviceMoments>();
    for (const name of names) {
      const m = tensors.get(`m.${name}`);
      const v = tensors.get(`v.${name}`);
      if (!m || !v) throw new Error(`AdamW.fromSafetensors: ${m ? `v.${name}` : `m.${name}`} is missing (each parameter has both moments)`);
      moments.set(name, { m, v });
    }
    const opt = new AdamW({
      betas: opts.betas ?? (metadata.betas ? (JSON.parse(metadata.betas) as [number, number]) : undefined),
      eps: opts.eps ?? (metadata.eps ? Number(metadata.eps) : undefined),
      weightDecay: opts.weightDecay ?? (metadata.weight_decay ? Number(metadata.weight_decay) : undefined),
      decayFilter: opts.decayFilter,
      params: opts.params,
    });
    opt.step = step;
    opt.moments = moments;
    return opt;
  }

  /** Frees the moments (not the parameters). */
  dispose(): void {
    for (const { m, v } of this.moments.values()) tf.dispose([m, v]);
    this.moments.clear();
  }
}
