/**
 * The HF-style Qwen2 config (transformers `Qwen2Config`, config.json), validation, and the `tiny` preset
 * (DESIGN.md, "Models").
 */

/** Qwen2 hyper-parameters with HF config.json field names. Extra HF fields are allowed and ignored. */
export interface Qwen2Config {
  model_type: 'qwen2';
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  max_position_embeddings: number;
  rope_theta: number;
  rms_norm_eps: number;
  tie_word_embeddings: boolean;
  torch_dtype?: string;
  [extra: string]: unknown;
}

function posInt(cfg: Record<string, unknown>, key: string): number {
  const v = cfg[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    throw new Error(`Qwen2Config: ${key} = ${JSON.stringify(v)} is invalid; allowed: a positive integer`);
  }
  return v;
}

function posNum(cfg: Record<string, unknown>, key: string): number {
  const v = cfg[key];
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new Error(`Qwen2Config: ${key} = ${JSON.stringify(v)} is invalid; allowed: a finite number > 0`);
  }
  return v;
}

/**
 * Validates a parsed config.json and returns it typed. Defaults as in HF Qwen2Config when absent:
 * rope_theta 10000, rms_norm_eps 1e-6, tie_word_embeddings false, num_key_value_heads = num_attention_heads.
 * @throws Error naming the field, its value and what is allowed (model_type must be 'qwen2'; sizes positive
 *   integers; hidden_size divisible by num_attention_heads; head_dim even (RoPE); num_attention_heads divisible
 *   by num_key_value_heads; hidden_act, when given, 'silu' and rope_scaling, when given, null: the only
 *   activation and RoPE this decoder implements).
 */
export function validateQwen2Config(raw: unknown): Qwen2Config {
  if (!raw || typeof raw !== 'object') throw new Error(`Qwen2Config: expected an object, got ${JSON.stringify(raw)}`);
  const c = { ...(raw as Record<string, unknown>) };
  if (c.model_type !== 'qwen2') {
    throw new Error(`Qwen2Config: model_type = ${JSON.stringify(c.model_type)} is not supported; allowed: 'qwen2'`);
  }
  if (c.hidden_act !== undefined && c.hidden_act !== 'silu') {
    throw new Error(`Qwen2Config: hidden_act = ${JSON.stringify(c.hidden_act)} is not supported; allowed: 'silu'`);
  }
  if (c.rope_scaling !== undefined && c.rope_scaling !== null) {
    throw new Error(`Qwen2Config: rope_scaling = ${JSON.stringify(c.rope_scaling)} is not supported; allowed: null (plain RoPE)`);
  }
  if (c.rope_theta === undefined) c.rope_theta = 10000;
  if (c.rms_norm_eps === undefined) c.rms_norm_eps = 1e-6;
  if (c.tie_word_embeddings === undefined) c.tie_word_embeddings = false;
  if (c.num_key_value_heads === undefined) c.num_key_value_heads = c.num_attention_heads;
  for (const k of ['vocab_size', 'hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads',
    'num_key_value_heads', 'max_position_embeddings']) posInt(c, k);
  posNum(c, 'rope_theta');
  posNum(c, 'rms_norm_eps');
  if (typeof c.tie_word_embeddings !== 'boolean') {
    throw new Error(`Qwen2Config: tie_word_embeddings = ${JSON.stringify(c.tie_word_embeddings)} is invalid; allowed: true or false`);
  }
  const h = c.hidden_size as number;
  const nh = c.num_attention_heads as number;
  const nkv = c.num_key_value_heads as number;
  if (h % nh !== 0) {
    throw new Error(`Qwen2Config: hidden_size = ${h} is not divisible by num_attention_heads = ${nh}`);
  }
  if ((h / nh) % 2 !== 0) throw new Error(`Qwen2Config: head_dim = hidden_size/num_attention_heads = ${h / nh} must be even (RoPE)`);
  if (nh % nkv !== 0) {
    throw new Error(`Qwen2Config: num_attention_heads = ${nh} is not divisible by num_key_value_heads = ${nkv}`);
  }
  return c as Qwen2Config;
}

/** Head dimension = hidden_size / num_attention_heads. */
export function headDim(cfg: Qwen2Config): number {
  return cfg.hidden_size / cfg.num_attention_heads;
}

/** The `pretrain` value of the built-in preset (any other value is an HF model folder). */
export const TINY_PRESET = 'tiny';

/**
 * The `tiny` CPU preset: 2 layers, hidden 64, 4 heads (head_dim 16), 2 kv heads, intermediate 192, tied
 * embeddings, rope_theta 10000, max_position_embeddings 2048. With the 101-id char tokenizer it has
 * 105,344 parameters (98,816 in the layers + 6,464 embedding + 64 final norm), see `countParams`.
 */
export function tinyPreset(vocabSize: number): Qwen2Config {
  return validateQwen2Config({
    model_type: 'qwen2',
    vocab_size: vocabSize,
    hidden_size: 64,
    intermediate_size: 192,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    max_position_embeddings: 2048,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
    torch_dtype: 'float32',
  });
}

/**
 * HF weight names and shapes ([out, in] for linear weights, as in transformers' Qwen2 modeling code) for a config,
 * in a fixed order: embed, then per layer, then the final norm, then lm_head when not tied.
 */
export function weightShapes(cfg: Qwen2Config): Array<[string, number[]]> {
  const h = cfg.hidden_size;
  const d = headDim(cfg);
  const q = cfg.num_attention_heads * d;
  const kv = cfg.num_key_value_heads * d;
  const f = cfg.intermediate_size;
  const out: Array<[string, number[]]> = [['model.embed_tokens.weight', [cfg.vocab_size, h]]];
  for (let i = 0; i < cfg.num_hidden_layers; i++) {
    const p = `model.layers.${i}.`;
    out.push(
      [`${p}input_layernorm.weight`, [h]],
      [`${p}self_attn.q_proj.weight`, [q, h]],
      [`${p}self_attn.q_proj.bias`, [q]],
      [`${p}self_attn.k_proj.weight`, [kv, h]],
      [`${p}self_attn.k_proj.bias`, [kv]],
      [`${p}self_attn.v_proj.weight`, [kv, h]],
      [`${p}self_attn.v_proj.bias`, [kv]],
      [`${p}self_attn.o_proj.weight`, [h, q]],
      [`${p}post_attention_layernorm.weight`, [h]],
      [`${p}mlp.gate_proj.weight`, [f, h]],
      [`${p}mlp.up_proj.weight`, [f, h]],
      [`${p}mlp.down_proj.weight`, [h, f]],
    );
  }
  out.push(['model.norm.weight', [h]]);
  if (!cfg.tie_word_embeddings) out.push(['lm_head.weight', [cfg.vocab_size, h]]);
  return out;
}

/** Total parameter count of a config (tied lm_head counted once). */
export function countParams(cfg: Qwen2Config): number {
  return weightShapes(cfg).reduce((s, [, shape]) => s + shape.reduce((a, b) => a * b, 1), 0);
}
