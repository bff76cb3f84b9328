/**
 * The HF-style Qwen2 config (transformers `Qwen2Config`, config.json), validation, and the `tiny` preset
 * (docs/hf_models.md).
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

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The RoPE of a config.json: its type and theta, and the key naming the type (for messages). */
export interface RopeSpec {
  rope_type: string;
  rope_theta: number;
  typeKey: string;
}

/**
 * RoPE as transformers 5 reads config.json (modeling_rope_utils.py `convert_rope_params_to_dict`): the
 * transformers 4 spelling's `rope_scaling` (when non-empty) else the transformers 5 `rope_parameters`; its
 * `rope_type` (else its `type`, else "default"); its `rope_theta`, else the top-level `rope_theta`, else 10000.
 * @throws Error for rope_parameters given per layer type (one dict per attention type)
 */
export function ropeOf(raw: Record<string, unknown>): RopeSpec {
  const scaling = isObject(raw.rope_scaling) && Object.keys(raw.rope_scaling).length > 0 ? raw.rope_scaling : null;
  const source = scaling ? 'rope_scaling' : 'rope_parameters';
  const params = scaling ?? (isObject(raw.rope_parameters) ? raw.rope_parameters : {});
  if (isObject(params.full_attention) || isObject(params.sliding_attention)) {
    throw new Error(
      `Qwen2Config: ${source} = ${JSON.stringify(params)} gives RoPE per layer type; allowed: one {"rope_type": "default", "rope_theta": ...}`,
    );
  }
  // A key present with null is kept as transformers keeps it (and then fails on it), not defaulted.
  const typeKey = params.rope_type !== undefined ? 'rope_type' : params.type !== undefined ? 'type' : null;
  const rope_type = typeKey ? params[typeKey] : 'default';
  const thetaKey = params.rope_theta !== undefined ? `${source}.rope_theta` : 'rope_theta';
  const rope_theta = params.rope_theta !== undefined ? params.rope_theta : raw.rope_theta !== undefined ? raw.rope_theta : 10000;
  if (typeof rope_type !== 'string')
    throw new Error(`Qwen2Config: ${source}.${typeKey} = ${JSON.stringify(rope_type)} is invalid; allowed: "default"`);
  if (typeof rope_theta !== 'number' || !Number.isFinite(rope_theta) || rope_theta <= 0) {
    throw new Error(`Qwen2Config: ${thetaKey} = ${JSON.stringify(rope_theta)} is invalid; allowed: a finite number > 0`);
  }
  return { rope_type, rope_theta, typeKey: `${source}.${typeKey ?? 'rope_type'}` };
}

/** transformers' Qwen2Config defaults of the sliding-window keys (configuration_qwen2.py). */
const SLIDING_DEFAULTS = { sliding_window: 4096, max_window_layers: 28 };

/**
 * The sliding window each layer's attention uses, or null for full attention, as transformers 5 decides
 * (configuration_qwen2.py, modeling_qwen2.py `Qwen2Attention.sliding_window`): the window is
 * `sliding_window` only when `use_sliding_window` is true; a layer slides when `layer_types` says
 * "sliding_attention", or, without layer_types, when there is a window and its index >= max_window_layers.
 * Real Qwen2.5 configs have use_sliding_window false: every layer attends fully.
 * @throws Error for layer_types of the wrong length or values, or a sliding layer without a window
 *   (transformers fails on it)
 */
export function layerWindows(raw: Record<string, unknown>, layers: number): Array<number | null> {
  const use = raw.use_sliding_window ?? false;
  if (typeof use !== 'boolean')
    throw new Error(`Qwen2Config: use_sliding_window = ${JSON.stringify(use)} is invalid; allowed: true or false`);
  const window = use ? (raw.sliding_window === undefined ? SLIDING_DEFAULTS.sliding_window : raw.sliding_window) : null;
  if (window !== null && (typeof window !== 'number' || !Number.isInteger(window) || window <= 0)) {
    throw new Error(`Qwen2Config: sliding_window = ${JSON.stringify(window)} is invalid; allowed: a positive integer or null`);
  }
  const maxWindowLayers = raw.max_window_layers ?? SLIDING_DEFAULTS.max_window_layers;
  if (typeof maxWindowLayers !== 'number' || !Number.isInteger(maxWindowLayers) || maxWindowLayers < 0) {
    throw new Error(`Qwen2Config: max_window_layers = ${JSON.stringify(maxWindowLayers)} is invalid; allowed: an integer >= 0`);
  }
  const types =
    raw.layer_types ??
    Array.from({ length: layers }, (_, i) => (window !== null && i >= maxWindowLayers ? 'sliding_attention' : 'full_attention'));
  const allowed = ['full_attention', 'sliding_attention'];
  if (!Array.isArray(types) || types.length !== layers || types.some((t) => !allowed.includes(t))) {
    throw new Error(
      `Qwen2Config: layer_types = ${JSON.stringify(types)} is invalid; allowed: ${layers} (num_hidden_layers) of ${allowed.map((t) => JSON.stringify(t)).join(', ')}`,
    );
  }
  return types.map((t, i) => {
    if (t !== 'sliding_attention') return null;
    if (window === null) {
      throw new Error(
        `Qwen2Config: layer_types[${i}] = "sliding_attention" but use_sliding_window = ${JSON.stringify(use)} and sliding_window = ${JSON.stringify(raw.sliding_window ?? null)} give no window (transformers fails on it); allowed: "full_attention", or use_sliding_window true with a sliding_window`,
      );
    }
    return window as number;
  });
}

/**
 * The smallest sliding window any layer uses, with the layer and why it slides, or null when every layer
 * attends fully (see layerWindows). Attention over at most that many positions equals full attention.
 */
export function activeSlidingWindow(cfg: Qwen2Config): { window: number; layer: number; because: string } | null {
  const windows = layerWindows(cfg, cfg.num_hidden_layers);
  let layer = -1;
  windows.forEach((w, i) => {
    if (w !== null && (layer < 0 || w < (windows[layer] as number))) layer = i;
  });
  if (layer < 0) return null;
  const because = cfg.layer_types
    ? `layer_types[${layer}] = "sliding_attention"`
    : `layer ${layer} >= max_window_layers = ${cfg.max_window_layers ?? SLIDING_DEFAULTS.max_window_layers}`;
  return { window: windows[layer] as number, layer, because };
}

/**
 * Validates a parsed config.json in either spelling (transformers 4: top-level `rope_theta`,
 * `rope_scaling`, `torch_dtype`; transformers 5: `rope_parameters`, `dtype`, `layer_types`) and returns
 * it typed, with `rope_theta` set to the theta transformers uses (ropeOf). Defaults as in HF Qwen2Config
 * when absent: rms_norm_eps 1e-6, tie_word_embeddings false, num_key_value_heads = num_attention_heads.
 * @throws Error naming the key, its value and what is allowed: model_type must be 'qwen2'; the RoPE type
 *   "default" (scaled RoPE such as yarn is not implemented); sizes positive integers; hidden_size
 *   divisible by num_attention_heads; head_dim, when given, hidden_size/num_attention_heads and even;
 *   num_attention_heads divisible by num_key_value_heads; hidden_act, when given, 'silu'; layer_types
 *   and the sliding-window keys as layerWindows reads them. Whether a sliding window is shorter than the
 *   sequences is for the caller (hf/folder.ts), which knows their length.
 */
export function validateQwen2Config(raw: unknown): Qwen2Config {
  if (!isObject(raw)) throw new Error(`Qwen2Config: expected an object, got ${JSON.stringify(raw)}`);
  const c = { ...raw };
  if (c.model_type !== 'qwen2') {
    throw new Error(`Qwen2Config: model_type = ${JSON.stringify(c.model_type)} is not supported; allowed: 'qwen2'`);
  }
  if (c.hidden_act !== undefined && c.hidden_act !== 'silu') {
    throw new Error(`Qwen2Config: hidden_act = ${JSON.stringify(c.hidden_act)} is not supported; allowed: 'silu'`);
  }
  const rope = ropeOf(c);
  if (rope.rope_type !== 'default') {
    throw new Error(
      `Qwen2Config: ${rope.typeKey} = ${JSON.stringify(rope.rope_type)} is not supported; allowed: "default" (plain RoPE; scaled RoPE is not implemented)`,
    );
  }
  c.rope_theta = rope.rope_theta;
  if (c.rms_norm_eps === undefined) c.rms_norm_eps = 1e-6;
  if (c.tie_word_embeddings === undefined) c.tie_word_embeddings = false;
  if (c.num_key_value_heads === undefined || c.num_key_value_heads === null) c.num_key_value_heads = c.num_attention_heads;
  for (const k of [
    'vocab_size',
    'hidden_size',
    'intermediate_size',
    'num_hidden_layers',
    'num_attention_heads',
    'num_key_value_heads',
    'max_position_embeddings',
  ])
    posInt(c, k);
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
  if (c.head_dim !== undefined && c.head_dim !== null && c.head_dim !== h / nh) {
    throw new Error(
      `Qwen2Config: head_dim = ${JSON.stringify(c.head_dim)} is not supported; allowed: hidden_size/num_attention_heads = ${h / nh}`,
    );
  }
  if ((h / nh) % 2 !== 0) throw new Error(`Qwen2Config: head_dim = hidden_size/num_attention_heads = ${h / nh} must be even (RoPE)`);
  if (nh % nkv !== 0) {
    throw new Error(`Qwen2Config: num_attention_heads = ${nh} is not divisible by num_key_value_heads = ${nkv}`);
  }
  layerWindows(c, c.num_hidden_layers as number);
  return c as Qwen2Config;
}

/** Head dimension = hidden_size / num_attention_heads. */
export function headDim(cfg: Qwen2Config): number {
  return cfg.hidden_size / cfg.num_attention_heads;
}

/** The `pretrain` value of the built-in preset (any other value is an HF model folder). */
export const TINY_PRESET = 'tiny';

/** The sizes a run may change in the tiny preset (`config_overrides`, HF run_clm's name for a model trained from scratch). */
export type TinySizes = Partial<
  Pick<Qwen2Config, 'hidden_size' | 'intermediate_size' | 'num_hidden_layers' | 'num_attention_heads' | 'num_key_value_heads'>
>;

/**
 * The `tiny` CPU preset: 2 layers, hidden 64, 4 heads (head_dim 16), 2 kv heads, intermediate 192, tied
 * embeddings, rope_theta 10000, max_position_embeddings 2048. With the 101-id char tokenizer it has
 * 105,344 parameters (98,816 in the layers + 6,464 embedding + 64 final norm), see `countParams`.
 * `sizes` replace the preset's; the result is validated (e.g. heads must divide hidden_size).
 * @throws Error naming the field when the sizes make an invalid config
 */
export function tinyPreset(vocabSize: number, sizes: TinySizes = {}): Qwen2Config {
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
    ...sizes,
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
