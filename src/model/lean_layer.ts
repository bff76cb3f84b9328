/**
 * A decoder layer of a training forward (qwen2.ts `decoderLayer`: RMSNorm, q/k/v, RoPE, grouped attention, o_proj,
 * RMSNorm, SwiGLU MLP, with the residuals) as one differentiable op with its own backward pass, for the backends
 * other than wasm. Why: tfjs's tape keeps, until the whole backward pass ends, every op's saved inputs and outputs
 * AND the gradient of every intermediate tensor, so a layer of plain ops holds many times what its backward needs
 * (the MLP alone some ten [N, intermediate] tensors). This op keeps only the layer input, the two RMSNorm scales,
 * q/k/v after RoPE, the attention output, the residual after attention and the MLP's gate and up projections, as
 * PyTorch's autograd does; the normalized inputs, the SwiGLU activation and the attention probabilities are
 * recomputed in the backward pass (elementwise work and one q k^T product), and what it kept is freed as soon as
 * its backward pass has run. The forward is the same ops in the same order as the plain layer: the same values.
 * With LoRA adapters (lora.ts) the layer's own weights are frozen: it returns the adapters' gradients only.
 */
import * as tf from '@tensorflow/tfjs';
import { chunkedAttention, chunkedAttentionGrad, groupHeads, ungroupHeads } from './attention';
import type { AttentionMask } from './attention_mask';
import { type FusedWeights, linear } from './kernels';
import { rmsNormGrad, rmsRstd } from './rms_norm';
import { applyRope, applyRopeGrad, type RopeTables } from './rope';

/** A linear layer's weight [out, in] and, when the model has one, its bias [out]. */
export interface LinearWeights {
  w: tf.Tensor2D;
  b?: tf.Tensor1D;
}

/** The weights of one decoder layer (HF names in the comments). */
export interface DecoderLayerWeights {
  /** input_layernorm.weight */
  inputNorm: tf.Tensor1D;
  /** self_attn.q_proj, k_proj, v_proj */
  q: LinearWeights;
  k: LinearWeights;
  v: LinearWeights;
  /** q, k and v stacked along the output axis (FusedWeights): one matmul for the three */
  qkv: LinearWeights;
  /** self_attn.o_proj */
  o: LinearWeights;
  /** post_attention_layernorm.weight */
  postNorm: tf.Tensor1D;
  /** mlp.gate_proj, up_proj, down_proj */
  gate: LinearWeights;
  up: LinearWeights;
  down: LinearWeights;
}

/**
 * The weights of the decoder layer of prefix `p` (`model.layers.<l>.`) read through `get` (HF name -> weight), with
 * q, k and v stacked by `fused` (kept while they are unchanged).
 */
export function layerWeightsOf(get: (name: string) => tf.Tensor | undefined, fused: FusedWeights, p: string): DecoderLayerWeights {
  const must = (name: string) => {
    const t = get(name);
    if (!t) throw new Error(`decoder layer: weight ${name} is missing`);
    return t;
  };
  const lin = (name: string): LinearWeights => ({
    w: must(`${p}${name}.weight`) as tf.Tensor2D,
    b: get(`${p}${name}.bias`) as tf.Tensor1D | undefined,
  });
  const [q, k, v] = ['q_proj', 'k_proj', 'v_proj'].map((n) => lin(`self_attn.${n}`));
  const bs = q.b && k.b && v.b ? [q.b, k.b, v.b] : undefined;
  const { stacked, bias } = fused.of(`${p}self_attn.`, [q.w, k.w, v.w], bs);
  return {
    inputNorm: must(`${p}input_layernorm.weight`) as tf.Tensor1D,
    q,
    k,
    v,
    qkv: { w: stacked, b: bias },
    o: lin('self_attn.o_proj'),
    postNorm: must(`${p}post_attention_layernorm.weight`) as tf.Tensor1D,
    gate: lin('mlp.gate_proj'),
    up: lin('mlp.up_proj'),
    down: lin('mlp.down_proj'),
  };
}

/** The shapes of one layer's forward: B rows of L positions, H query heads on KVH key/value heads of D, RMSNorm eps. */
export interface DecoderLayerDims {
  B: number;
  L: number;
  H: number;
  KVH: number;
  D: number;
  eps: number;
}

/** A LoRA adapter of one of the layer's linear layers: scale * x A^T B^T added to its output (lora.ts). */
export interface LinearAdapter {
  a: tf.Tensor2D;
  b: tf.Tensor2D;
  scale: number;
}

/** The linear layers of a decoder layer that can carry an adapter. */
const ADAPTABLE = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const;

/** The adapters of a decoder layer's linear layers (absent: none). With adapters the layer's own weights are frozen. */
export type LayerAdapters = Partial<Record<(typeof ADAPTABLE)[number], LinearAdapter>>;

/** y plus the adapter's output for input u, when there is an adapter. */
const withDelta = (y: tf.Tensor2D, u: tf.Tensor2D, ad?: LinearAdapter): tf.Tensor2D =>
  ad ? (tf.add(y, tf.mul(tf.matMul(tf.matMul(u, ad.a, false, true), ad.b, false, true), ad.scale)) as tf.Tensor2D) : y;

/** dA, dB and the input's gradient of an adapter whose input is u and whose output's gradient is dy. */
function adapterGrad(ad: LinearAdapter, dy: tf.Tensor2D, u: tf.Tensor2D): { dA: tf.Tensor2D; dB: tf.Tensor2D; du: tf.Tensor2D } {
  return tf.tidy(() => {
    const t = tf.mul(tf.matMul(dy, ad.b), ad.scale) as tf.Tensor2D; // d loss / d (u A^T), [N, r]
    const dB = tf.mul(tf.matMul(dy, tf.matMul(u, ad.a, false, true), true, false), ad.scale) as tf.Tensor2D;
    return { dA: tf.matMul(t, u, true, false), dB, du: tf.matMul(t, ad.a) };
  });
}

const params = (l: LinearWeights): tf.Tensor[] => (l.b ? [l.w, l.b] : [l.w]);
/** dW = dy^T x and, with a bias, db = the column sums of dy, in the order of `params`. */
const linearGrads = (l: LinearWeights, dy: tf.Tensor2D, x: tf.Tensor2D): tf.Tensor[] =>
  l.b ? [tf.matMul(dy, x, true, false), tf.sum(dy, 0)] : [tf.matMul(dy, x, true, false)];

/**
 * x + attention(RMSNorm(x)), then + MLP(RMSNorm(.)), differentiable w.r.t. x and every weight of `wts`; with
 * `adapters` (LoRA, as PEFT applies it) w.r.t. x and the adapters only: the layer's weights are frozen, and the
 * backward pass computes no weight gradient for them.
 * @param x float32 [B * L, E]; rope the tables of these positions; mask the causal mask of these L queries over L keys
 * @returns float32 [B * L, E]
 */
export function leanDecoderLayer(
  x: tf.Tensor2D,
  wts: DecoderLayerWeights,
  dims: DecoderLayerDims,
  rope: RopeTables,
  mask: AttentionMask,
  adapters?: LayerAdapters,
): tf.Tensor2D {
  const { B, L, H, KVH, D, eps } = dims;
  const N = B * L;
  const ad = adapters ?? {};
  const adapted = ADAPTABLE.filter((n) => ad[n]);
  const inputs = adapters
    ? adapted.flatMap((n) => [ad[n]!.a, ad[n]!.b])
    : [
        wts.inputNorm,
        ...params(wts.q),
        ...params(wts.k),
        ...params(wts.v),
        ...params(wts.o),
        wts.postNorm,
        ...params(wts.gate),
        ...params(wts.up),
        ...params(wts.down),
      ];
  const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const xi = args[0] as tf.Tensor2D;
    const save = args[args.length - 1] as tf.GradSaveFunc;
    // Scopes free each half's intermediates (attention scores, the SwiGLU activation) once it is done.
    const { r1, qg, k, v, o } = tf.tidy(() => {
      const r1 = rmsRstd(xi, eps);
      const a = tf.mul(tf.mul(xi, r1), wts.inputNorm) as tf.Tensor2D;
      const [qk, vProj] = tf.split(qkvOf(a, wts, ad, N), [(H + KVH) * D, KVH * D], 1);
      const [q, kRope] = tf.split(applyRope(tf.reshape(qk, [B, L, H + KVH, D]), rope.cos, rope.sin), [H, KVH], 2);
      const k = tf.transpose(kRope, [0, 2, 1, 3]) as tf.Tensor4D;
      const v = tf.transpose(tf.reshape(vProj, [B, L, KVH, D]), [0, 2, 1, 3]) as tf.Tensor4D;
      const qg = groupHeads(tf.mul(q, 1 / Math.sqrt(D)) as tf.Tensor4D, KVH);
      const o = tf.reshape(ungroupHeads(chunkedAttention(qg, k, v, mask), B, L, H), [N, H * D]) as tf.Tensor2D;
      return { r1, qg, k, v, o };
    });
    const h = tf.add(xi, withDelta(linear(o, wts.o.w, wts.o.b), o, ad.o)) as tf.Tensor2D;
    const { r2, gate, up, value } = tf.tidy(() => {
      const r2 = rmsRstd(h, eps);
      const m = tf.mul(tf.mul(h, r2), wts.postNorm) as tf.Tensor2D;
      const gate = withDelta(linear(m, wts.gate.w, wts.gate.b), m, ad.gate);
      const up = withDelta(linear(m, wts.up.w, wts.up.b), m, ad.up);
      const act = tf.mul(tf.mul(gate, tf.sigmoid(gate)), up) as tf.Tensor2D;
      return { r2, gate, up, value: tf.add(h, withDelta(linear(act, wts.down.w, wts.down.b), act, ad.down)) as tf.Tensor2D };
    });
    // The stacked q/k/v weight (FusedWeights replaces it when a weight changes), the RoPE tables and the mask's
    // biases (freed when the forward returns) are kept too; a kept tensor shares its original's memory.
    save([xi, r1, qg, k, v, o, h, r2, gate, up, wts.qkv.w, rope.cos, rope.sin, ...mask.chunks.map((c) => c.bias)]);
    const gradFunc = (dy: tf.Tensor2D, saved: tf.Tensor[]): tf.Tensor[] => {
      type T2 = tf.Tensor2D;
      type T4 = tf.Tensor4D;
      const [xs, r1s, qgs, ks, vs, os, hs, r2s, gates, ups, wqkv, cos, sin, ...biases] = saved as [
        T2,
        T2,
        T4,
        T4,
        T4,
        T2,
        T2,
        T2,
        T2,
        T2,
        T2,
        T4,
        T4,
        ...T4[],
      ];
      const grads = tf.tidy(() => {
        const adapterGrads = new Map<string, tf.Tensor[]>();
        /** An adapter's dA, dB (kept for the result) and its input's gradient (returned), or null without one. */
        const through = (name: (typeof ADAPTABLE)[number], dOut: tf.Tensor2D, u: tf.Tensor2D): tf.Tensor2D | null => {
          const a = ad[name];
          if (!a) return null;
          const g = adapterGrad(a, dOut, u);
          adapterGrads.set(name, [tf.keep(g.dA), tf.keep(g.dB)]); // kept through mlpGrad's scope: they are returned
          return g.du;
        };
        const mlp = mlpGrad(dy, hs, r2s, gates, ups, wts, through, !adapters);
        const dh = tf.add(dy, mlp.dh) as tf.Tensor2D;
        // Attention: o_proj, the head reorder, the attention itself, RoPE on q and k, the q/k/v projection.
        const keptMask = { ...mask, chunks: mask.chunks.map((c, i) => ({ ...c, bias: biases[i] })) };
        const dO = plus(tf.matMul(dh, wts.o.w), through('o', dh, os));
        const dOut = groupHeads(tf.reshape(dO, [B, L, H, D]) as tf.Tensor4D, KVH);
        const att = chunkedAttentionGrad(qgs, ks, vs, keptMask, dOut);
        const dq = tf.mul(tf.reshape(ungroupHeads(att.dq, B, L, H), [B, L, H, D]), 1 / Math.sqrt(D));
        const dqk = applyRopeGrad(tf.concat([dq, tf.transpose(att.dk, [0, 2, 1, 3])], 2) as tf.Tensor4D, cos, sin);
        const dv = tf.reshape(tf.transpose(att.dv, [0, 2, 1, 3]), [N, KVH * D]);
        const dqkv = tf.concat([tf.reshape(dqk, [N, (H + KVH) * D]), dv], 1) as tf.Tensor2D;
        const a = tf.mul(tf.mul(xs, r1s), wts.inputNorm) as tf.Tensor2D;
        const sizes = [H * D, KVH * D, KVH * D];
        const [dq3, dk3, dv3] = tf.split(dqkv, sizes, 1) as tf.Tensor2D[];
        let da = tf.matMul(dqkv, wqkv) as tf.Tensor2D;
        for (const [name, d] of [
          ['q', dq3],
          ['k', dk3],
          ['v', dv3],
        ] as const)
          da = plus(da, through(name, d as tf.Tensor2D, a));
        const norm = rmsNormGrad(da, xs, r1s, wts.inputNorm);
        const dx = tf.add(dh, norm.dx);
        if (adapters) return [dx, ...adapted.flatMap((n) => adapterGrads.get(n) as tf.Tensor[])];
        const dW = tf.split(tf.matMul(dqkv, a, true, false), sizes, 0);
        const db = wts.qkv.b ? tf.split(tf.sum(dqkv, 0), sizes, 0) : [];
        const qkvGrads = [0, 1, 2].flatMap((i) => (wts.qkv.b ? [dW[i], db[i]] : [dW[i]]));
        return [dx, norm.dw, ...qkvGrads, ...linearGrads(wts.o, dh, os), mlp.dPostNorm, ...mlp.weightGrads];
      });
      // Freed now rather than when the whole backward pass ends (the engine's own dispose of them is then a no-op).
      tf.dispose(saved);
      return grads;
    };
    return { value, gradFunc };
  });
  return f(x, ...inputs) as tf.Tensor2D;
}

/** x + d, or x when there is no d. */
const plus = (x: tf.Tensor2D, d: tf.Tensor2D | null): tf.Tensor2D => (d ? (tf.add(x, d) as tf.Tensor2D) : x);

/** The stacked q/k/v projection of a, with the q, k and v adapters' outputs (zeros where one has none). */
function qkvOf(a: tf.Tensor2D, wts: DecoderLayerWeights, ad: LayerAdapters, N: number): tf.Tensor2D {
  const y = linear(a, wts.qkv.w, wts.qkv.b);
  if (!ad.q && !ad.k && !ad.v) return y;
  const parts = (['q', 'k', 'v'] as const).map((n) => withDelta(tf.zeros([N, wts[n].w.shape[0]]), a, ad[n]));
  return tf.add(y, tf.concat(parts, 1)) as tf.Tensor2D;
}

/**
 * The gradients of the MLP half, y = h + down(silu(gate) * up) with gate, up = gate_proj, up_proj of
 * m = RMSNorm(h), w.r.t. h through the norm (not the residual), the norm's weight and, with `weightGradients`, the
 * MLP's weights (gate, up, down, in `params` order); an adapter's gradients go through `through`.
 * silu'(g) = s (1 + g (1 - s)) for s = sigmoid(g).
 */
function mlpGrad(
  dy: tf.Tensor2D,
  h: tf.Tensor2D,
  r2: tf.Tensor2D,
  gate: tf.Tensor2D,
  up: tf.Tensor2D,
  wts: DecoderLayerWeights,
  through: (name: 'gate' | 'up' | 'down', dOut: tf.Tensor2D, u: tf.Tensor2D) => tf.Tensor2D | null,
  weightGradients: boolean,
): { dh: tf.Tensor2D; dPostNorm: tf.Tensor1D; weightGrads: tf.Tensor[] } {
  // Each [N, intermediate] temporary is freed as soon as it is used: the backward pass of one layer then holds a
  // few of them at a time, not a dozen.
  return tf.tidy(() => {
    const s = tf.sigmoid(gate);
    const silu = tf.mul(gate, s) as tf.Tensor2D;
    const act = tf.mul(silu, up) as tf.Tensor2D;
    const dDown = weightGradients ? linearGrads(wts.down, dy, act) : [];
    const dAct = plus(tf.matMul(dy, wts.down.w), through('down', dy, act));
    act.dispose();
    const du = tf.mul(dAct, silu) as tf.Tensor2D;
    silu.dispose();
    const dg = tf.tidy(() => tf.mul(tf.mul(dAct, up), tf.mul(s, tf.add(1, tf.mul(gate, tf.sub(1, s)))))) as tf.Tensor2D;
    tf.dispose([s, dAct]);
    const m = tf.mul(tf.mul(h, r2), wts.postNorm) as tf.Tensor2D;
    const dm = plus(
      plus(tf.add(tf.matMul(dg, wts.gate.w), tf.matMul(du, wts.up.w)) as tf.Tensor2D, through('gate', dg, m)),
      through('up', du, m),
    );
    const weightGrads = weightGradients ? [...linearGrads(wts.gate, dg, m), ...linearGrads(wts.up, du, m), ...dDown] : [];
    tf.dispose([dg, du, m]);
    const norm = rmsNormGrad(dm, h, r2, wts.postNorm);
    return { dh: norm.dx, dPostNorm: norm.dw, weightGrads };
  });
}
