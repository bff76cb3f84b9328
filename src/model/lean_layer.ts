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

const params = (l: LinearWeights): tf.Tensor[] => (l.b ? [l.w, l.b] : [l.w]);
/** dW = dy^T x and, with a bias, db = the column sums of dy, in the order of `params`. */
const linearGrads = (l: LinearWeights, dy: tf.Tensor2D, x: tf.Tensor2D): tf.Tensor[] =>
  l.b ? [tf.matMul(dy, x, true, false), tf.sum(dy, 0)] : [tf.matMul(dy, x, true, false)];

/**
 * x + attention(RMSNorm(x)), then + MLP(RMSNorm(.)), differentiable w.r.t. x and every weight of `wts`.
 * @param x float32 [B * L, E]; rope the tables of these positions; mask the causal mask of these L queries over L keys
 * @returns float32 [B * L, E]
 */
export function leanDecoderLayer(
  x: tf.Tensor2D,
  wts: DecoderLayerWeights,
  dims: DecoderLayerDims,
  rope: RopeTables,
  mask: AttentionMask,
): tf.Tensor2D {
  const { B, L, H, KVH, D, eps } = dims;
  const N = B * L;
  const weights = [
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
      const [qk, vProj] = tf.split(linear(a, wts.qkv.w, wts.qkv.b), [(H + KVH) * D, KVH * D], 1);
      const [q, kRope] = tf.split(applyRope(tf.reshape(qk, [B, L, H + KVH, D]), rope.cos, rope.sin), [H, KVH], 2);
      const k = tf.transpose(kRope, [0, 2, 1, 3]) as tf.Tensor4D;
      const v = tf.transpose(tf.reshape(vProj, [B, L, KVH, D]), [0, 2, 1, 3]) as tf.Tensor4D;
      const qg = groupHeads(tf.mul(q, 1 / Math.sqrt(D)) as tf.Tensor4D, KVH);
      const o = tf.reshape(ungroupHeads(chunkedAttention(qg, k, v, mask), B, L, H), [N, H * D]) as tf.Tensor2D;
      return { r1, qg, k, v, o };
    });
    const h = tf.add(xi, linear(o, wts.o.w, wts.o.b)) as tf.Tensor2D;
    const { r2, gate, up, value } = tf.tidy(() => {
      const r2 = rmsRstd(h, eps);
      const m = tf.mul(tf.mul(h, r2), wts.postNorm) as tf.Tensor2D;
      const gate = linear(m, wts.gate.w, wts.gate.b);
      const up = linear(m, wts.up.w, wts.up.b);
      const act = tf.mul(tf.mul(gate, tf.sigmoid(gate)), up) as tf.Tensor2D;
      return { r2, gate, up, value: tf.add(h, linear(act, wts.down.w, wts.down.b)) as tf.Tensor2D };
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
        const mlp = mlpGrad(dy, hs, r2s, gates, ups, wts);
        const dh = tf.add(dy, mlp.dh) as tf.Tensor2D;
        // Attention: o_proj, the head reorder, the attention itself, RoPE on q and k, the q/k/v projection.
        const keptMask = { ...mask, chunks: mask.chunks.map((c, i) => ({ ...c, bias: biases[i] })) };
        const dOut = groupHeads(tf.reshape(tf.matMul(dh, wts.o.w), [B, L, H, D]) as tf.Tensor4D, KVH);
        const att = chunkedAttentionGrad(qgs, ks, vs, keptMask, dOut);
        const dq = tf.mul(tf.reshape(ungroupHeads(att.dq, B, L, H), [B, L, H, D]), 1 / Math.sqrt(D));
        const dqk = applyRopeGrad(tf.concat([dq, tf.transpose(att.dk, [0, 2, 1, 3])], 2) as tf.Tensor4D, cos, sin);
        const dv = tf.reshape(tf.transpose(att.dv, [0, 2, 1, 3]), [N, KVH * D]);
        const dqkv = tf.concat([tf.reshape(dqk, [N, (H + KVH) * D]), dv], 1) as tf.Tensor2D;
        const a = tf.mul(tf.mul(xs, r1s), wts.inputNorm) as tf.Tensor2D;
        const sizes = [H * D, KVH * D, KVH * D];
        const dW = tf.split(tf.matMul(dqkv, a, true, false), sizes, 0);
        const db = wts.qkv.b ? tf.split(tf.sum(dqkv, 0), sizes, 0) : [];
        const norm = rmsNormGrad(tf.matMul(dqkv, wqkv), xs, r1s, wts.inputNorm);
        const qkvGrads = [0, 1, 2].flatMap((i) => (wts.qkv.b ? [dW[i], db[i]] : [dW[i]]));
        return [tf.add(dh, norm.dx), norm.dw, ...qkvGrads, ...linearGrads(wts.o, dh, os), mlp.dPostNorm, ...mlp.weightGrads];
      });
      // Freed now rather than when the whole backward pass ends (the engine's own dispose of them is then a no-op).
      tf.dispose(saved);
      return grads;
    };
    return { value, gradFunc };
  });
  return f(x, ...weights) as tf.Tensor2D;
}

/**
 * The gradients of the MLP half, y = h + down(silu(gate) * up) with gate, up = gate_proj, up_proj of
 * m = RMSNorm(h), w.r.t. h through the norm (not the residual), the norm's weight and the MLP's weights (gate, up,
 * down, in `params` order). silu'(g) = s (1 + g (1 - s)) for s = sigmoid(g).
 */
function mlpGrad(
  dy: tf.Tensor2D,
  h: tf.Tensor2D,
  r2: tf.Tensor2D,
  gate: tf.Tensor2D,
  up: tf.Tensor2D,
  wts: DecoderLayerWeights,
): { dh: tf.Tensor2D; dPostNorm: tf.Tensor1D; weightGrads: tf.Tensor[] } {
  // Each [N, intermediate] temporary is freed as soon as it is used: the backward pass of one layer then holds a
  // few of them at a time, not a dozen.
  return tf.tidy(() => {
    const s = tf.sigmoid(gate);
    const silu = tf.mul(gate, s) as tf.Tensor2D;
    const dDown = tf.tidy(() => linearGrads(wts.down, dy, tf.mul(silu, up) as tf.Tensor2D));
    const dAct = tf.matMul(dy, wts.down.w);
    const du = tf.mul(dAct, silu) as tf.Tensor2D;
    silu.dispose();
    const dg = tf.tidy(() => tf.mul(tf.mul(dAct, up), tf.mul(s, tf.add(1, tf.mul(gate, tf.sub(1, s)))))) as tf.Tensor2D;
    tf.dispose([s, dAct]);
    const dm = tf.tidy(() => tf.add(tf.matMul(dg, wts.gate.w), tf.matMul(du, wts.up.w))) as tf.Tensor2D;
    const m = tf.mul(tf.mul(h, r2), wts.postNorm) as tf.Tensor2D;
    const weightGrads = [...linearGrads(wts.gate, dg, m), ...linearGrads(wts.up, du, m), ...dDown];
    tf.dispose([dg, du, m]);
    const norm = rmsNormGrad(dm, h, r2, wts.postNorm);
    return { dh: norm.dx, dPostNorm: norm.dw, weightGrads };
  });
}
