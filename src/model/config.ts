/**
 * The HF-style config (config.json) of the two decoders qwen2.ts computes, Qwen2 and Llama (transformers
 * `Qwen2Config`, `LlamaConfig`), its validation, and the `tiny` preset (docs/hf_models.md).
 */

/** The config.json `model_type` of each decoder starpo computes, with the class transformers builds for it. */
export const ARCHITECTURES = { qwen2: 'Qwen2ForCausalLM', llama: 'LlamaForCausalLM' } as const;

/** A decoder starpo computes: `qwen2` or `llama`. */
export type ModelType = keyof typeof ARCHITECTURES;

/**
 * Hyper-parameters of a Qwen2 or Llama decoder with HF config.json field names. Extra HF fields are allowed and
 * ignored. The two architectures differ only in which linear layers have a bias (`attention_bias`, `mlp_bias`).
 */
export interface Qwen2Config {
  model_type: ModelType;
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
  /** q/k/v have a bias: always in Qwen2; in Llama as config.json says, and then o_proj has one too (modeling_llama.py). */
  attention_bias: boolean;
  /** gate/up/down have a bias: never in Qwen2; in Llama as config.json says. */
  mlp_bias: boolean;
  torch_dtype?: string;
  [extra: string]: unknown;
}

/** The transformers config class of a config.json, the prefix of every message about it. */
function who(raw: Record<string, unknown>): string {
  return raw.model_type === 'llama' ? 'LlamaConfig' : 'Qwen2Config';
}

function posInt(cfg: Record<string, unknown>, key: string): number {
  const v = cfg[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    throw new Error(`${who(cfg)}: ${key} = ${JSON.stringify(v)} is invalid; allowed: a positive integer`);
  }
  return v;
}

function posNum(cfg: Record<string, unknown>, key: string): number {
  const v = cfg[key];
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new Error(`${who(cfg)}: ${key} = ${JSON.stringify(v)} is invalid; allowed: a finite number > 0`);
  }
  return v;
}

function bool(cfg: Record<string, unknown>, key: string): boolean {
  const v = cfg[key];
  if (typeof v !== 'boolean') throw new Error(`${who(cfg)}: ${key} = ${JSON.stringify(v)} is invalid; allowed: true or false`);
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
      `${who(raw)}: ${source} = ${JSON.stringify(params)} gives RoPE per layer type; allowed: one {"rope_type": "default", "rope_theta": ...}`,
    );
  }
  // A key present with null is kept as transformers keeps it (and then fails on it), not defaulted.
  const typeKey = params.rope_type !== undefined ? 'rope_type' : params.type !== undefined ? 'type' : null;
  const rope_type = typeKey ? params[typeKey] : 'default';
  const thetaKey = params.rope_theta !== undefined ? `${source}.rope_theta` : 'rope_theta';
  const rope_theta = params.rope_theta !== undefined ? params.rope_theta : raw.rope_theta !== undefined ? raw.rope_theta : 10000;
  if (typeof rope_type !== 'string')
    throw new Error(`${who(raw)}: ${source}.${typeKey} = ${JSON.stringify(rope_type)} is invalid; allowed: "default"`);
  if (typeof rope_theta !== 'number' || !Number.isFinite(rope_theta) || rope_theta <= 0) {
    throw new Error(`${who(raw)}: ${thetaKey} = ${JSON.stringify(rope_theta)} is invalid; allowed: a finite number > 0`);
  }
  return { rope_type, rope_theta, typeKey: `${source}.${typeKey ?? 'rope_type'}` };
}

/** transformers' Qwen2Config defaults of the sliding-window keys (configuration_qwen2.py). */
const SLIDING_DEFAULTS = { sliding_window: 4096, max_window_layers: 28 };

/**
 * The window and default layer types of a config.json's sliding-window keys, as transformers 5 reads them.
 * Qwen2 (configuration_qwen2.py): the window is `sliding_window` only when `use_sliding_window` is true, and
 * layers from `max_window_layers` on slide. LlamaConfig has none of these keys, and its attention masks
 * nothing, but transformers' KV cache (cache_utils.py `get_layer_types_and_kwargs`) slides every layer by a
 * `sliding_window` left in its config.json: cached generation would then differ, so it counts as a window.
 */
function slidingKeys(raw: Record<string, unknown>, layers: number): { window: number | null; defaultTypes: string[]; noWindow: string } {
  const llama = raw.model_type === 'llama';
  const use = llama ? true : (raw.use_sliding_window ?? false);
  if (typeof use !== 'boolean')
    throw new Error(`${who(raw)}: use_sliding_window = ${JSON.stringify(use)} is invalid; allowed: true or false`);
  const given = raw.sliding_window === undefined && !llama ? SLIDING_DEFAULTS.sliding_window : (raw.sliding_window ?? null);
  const window = use ? given : null;
  if (window !== null && (typeof window !== 'number' || !Number.isInteger(window) || window <= 0)) {
    throw new Error(`${who(raw)}: sliding_window = ${JSON.stringify(window)} is invalid; allowed: a positive integer or null`);
  }
  const firstSliding = llama ? 0 : (raw.max_window_layers ?? SLIDING_DEFAULTS.max_window_layers);
  if (typeof firstSliding !== 'number' || !Number.isInteger(firstSliding) || firstSliding < 0) {
    throw new Error(`${who(raw)}: max_window_layers = ${JSON.stringify(firstSliding)} is invalid; allowed: an integer >= 0`);
  }
  const defaultTypes = Array.from({ length: layers }, (_, i) =>
    window !== null && i >= firstSliding ? 'sliding_attention' : 'full_attention',
  );
  const noWindow = llama
    ? `sliding_window = ${JSON.stringify(raw.sliding_window ?? null)} gives no window (transformers fails on it); allowed: "full_attention", or a sliding_window`
    : `use_sliding_window = ${JSON.stringify(use)} and sliding_window = ${JSON.stringify(raw.sliding_window ?? null)} give no window (transformers fails on it); allowed: "full_attention", or use_sliding_window true with a sliding_window`;
  return { window: window as number | null, defaultTypes, noWindow };
}

/**
 * The sliding window each layer's attention uses, or null for full attention, as transformers 5 decides
 * (slidingKeys; modeling_qwen2.py `Qwen2Attention.sliding_window`): a layer slides when `layer_types` says
 * "sliding_attention", or, without layer_types, as slidingKeys' default types say. Real Qwen2.5 configs have
 * use_sliding_window false and Llama configs no sliding_window: every layer attends fully.
 * @throws Error for layer_types of the wrong length or values, or a sliding layer without a window
 *   (transformers fails on it)
 */
export function layerWindows(raw: Record<string, unknown>, layers: number): Array<number | null> {
  const { window, defaultTypes, noWindow } = slidingKeys(raw, layers);
  const types = raw.layer_types ?? defaultTypes;
  const allowed = ['full_attention', 'sliding_attention'];
  if (!Array.isArray(types) || types.length !== layers || types.some((t) => !allowed.includes(t))) {
    throw new Error(
      `${who(raw)}: layer_types = ${JSON.stringify(types)} is invalid; allowed: ${layers} (num_hidden_layers) of ${allowed.map((t) => JSON.stringify(t)).join(', ')}`,
    );
  }
  return types.map((t, i) => {
    if (t !== 'sliding_attention') return null;
    if (window === null) throw new Error(`${who(raw)}: layer_types[${i}] = "sliding_attention" but ${noWindow}`);
    return window;
  });
}

/**
 * The smallest sliding window any layer uses, with the layer and why it slides (the keys that make it), or
 * null when every layer attends fully (see layerWindows). Attention over at most that many positions equals
 * full attention.
 */
export function activeSlidingWindow(cfg: Qwen2Config): { window: number; layer: number; because: string } | null {
  const windows = layerWindows(cfg, cfg.num_hidden_layers);
  let layer = -1;
  windows.forEach((w, i) => {
    if (w !== null && (layer < 0 || w < (windows[layer] as number))) layer = i;
  });
  if (layer < 0) return null;
  const llama = cfg.model_type === 'llama';
  const which = cfg.layer_types
    ? `layer_types[${layer}] = "sliding_attention"`
    : llama
      ? "transformers' KV cache slides every layer of a llama model by it"
      : `layer ${layer} >= max_window_layers = ${cfg.max_window_layers ?? SLIDING_DEFAULTS.max_window_layers}`;
  return { window: windows[layer] as number, layer, because: llama ? which : `use_sliding_window true, ${which}` };
}

/**
 * @throws RangeError when a position is >= max_position_embeddings, or reaches `sliding` (activeSlidingWindow):
 *   sliding-window attention is not implemented, and equals full attention while no position reaches the window
 */
export function assertPositions(cfg: Qwen2Config, sliding: { window: number; layer: number } | null, positions: ArrayLike<number>): void {
  for (let i = 0; i < positions.length; i++) {
    if (positions[i] >= cfg.max_position_embeddings) {
      throw new RangeError(`Qwen2: position ${positions[i]} >= max_position_embeddings = ${cfg.max_position_embeddings}`);
    }
    if (sliding && positions[i] >= sliding.window) {
      throw new RangeError(
        `Qwen2: position ${positions[i]} >= sliding_window = ${sliding.window} of layer ${sliding.layer} (sliding-window attention is not implemented)`,
      );
    }
  }
}

/**
 * transformers' defaults of the keys starpo reads (configuration_qwen2.py, configuration_llama.py), and what
 * the modeling code fixes whatever config.json says: Qwen2's q/k/v always have a bias, its MLP never. A
 * num_key_value_heads of null means num_attention_heads in both.
 */
const DEFAULTS: Record<ModelType, Record<string, unknown>> = {
  qwen2: { rms_norm_eps: 1e-6, tie_word_embeddings: false, max_position_embeddings: 32768, num_key_value_heads: 32 },
  llama: { rms_norm_eps: 1e-6, tie_word_embeddings: false, max_position_embeddings: 2048, attention_bias: false, mlp_bias: false },
};
const FIXED: Record<ModelType, Record<string, unknown>> = {
  qwen2: { attention_bias: true, mlp_bias: false },
  llama: {},
};

/**
 * Validates a parsed config.json of a Qwen2 or Llama model in either spelling (transformers 4: top-level
 * `rope_theta`, `rope_scaling`, `torch_dtype`; transformers 5: `rope_parameters`, `dtype`, `layer_types`) and
 * returns it typed, with `rope_theta` set to the theta transformers uses (ropeOf), the biases each architecture
 * has (`attention_bias`, `mlp_bias`), and transformers' defaults for absent keys (DEFAULTS). Llama's `pretraining_tp` is ignored, as transformers 5 ignores it.
 * @throws Error naming the key, its value and what is allowed: model_type 'qwen2' or 'llama'; the RoPE type
 *   "default" (scaled RoPE such as yarn or llama3 is not implemented); sizes positive integers; hidden_size
 *   divisible by num_attention_heads; head_dim, when given, hidden_size/num_attention_heads and even;
 *   num_attention_heads divisible by num_key_value_heads; hidden_act, when given, 'silu'; the biases
 *   booleans; layer_types and the sliding-window keys as layerWindows reads them. Whether a sliding window
 *   is shorter than the sequences is for the caller (hf/folder.ts), which knows their length.
 */
export function validateQwen2Config(raw: unknown): Qwen2Config {
  if (!isObject(raw)) throw new Error(`Qwen2Config: expected an object, got ${JSON.stringify(raw)}`);
  const c = { ...raw };
  const type = c.model_type;
  if (typeof type !== 'string' || !Object.hasOwn(ARCHITECTURES, type)) {
    throw new Error(
      `Qwen2Config: model_type = ${JSON.stringify(type)} is not supported; allowed: ${Object.keys(ARCHITECTURES)
        .map((t) => `'${t}'`)
        .join(', ')}`,
    );
  }
  if (c.hidden_act !== undefined && c.hidden_act !== 'silu') {
    throw new Error(`${who(c)}: hidden_act = ${JSON.stringify(c.hidden_act)} is not supported; allowed: 'silu'`);
  }
  const rope = ropeOf(c);
  if (rope.rope_type !== 'default') {
    throw new Error(
      `${who(c)}: ${rope.typeKey} = ${JSON.stringify(rope.rope_type)} is not supported; allowed: "default" (plain RoPE; scaled RoPE is not implemented)`,
    );
  }
  c.rope_theta = rope.rope_theta;
  for (const [k, v] of Object.entries(DEFAULTS[type as ModelType])) if (c[k] === undefined) c[k] = v;
  Object.assign(c, FIXED[type as ModelType]);
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
  for (const k of ['tie_word_embeddings', 'attention_bias', 'mlp_bias']) bool(c, k);
  const h = c.hidden_size as number;
  const nh = c.num_attention_heads as number;
  const nkv = c.num_key_value_heads as number;
  if (h % nh !== 0) {
    throw new Error(`${who(c)}: hidden_size = ${h} is not divisible by num_attention_heads = ${nh}`);
  }
  if (c.head_dim !== undefined && c.head_dim !== null && c.head_dim !== h / nh) {
    throw new Error(
      `${who(c)}: head_dim = ${JSON.stringify(c.head_dim)} is not supported; allowed: hidden_size/num_attention_heads = ${h / nh}`,
    );
  }
  if ((h / nh) % 2 !== 0) throw new Error(`${who(c)}: head_dim = hidden_size/num_attention_heads = ${h / nh} must be even (RoPE)`);
  if (nh % nkv !== 0) {
    throw new Error(`${who(c)}: num_attention_heads = ${nh} is not divisible by num_key_value_heads = ${nkv}`);
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
 * HF weight names and shapes ([out, in] for linear weights, as in transformers' Qwen2 and Llama modeling code) for a
 * config, in a fixed order: embed, then per layer, then the final norm, then lm_head when not tied. A linear layer's
 * bias follows its weight when the config gives it one (`attention_bias`, `mlp_bias`).
 */
export function weightShapes(cfg: Qwen2Config): Array<[string, number[]]> {
  const h = cfg.hidden_size;
  const d = headDim(cfg);
  const q = cfg.num_attention_heads * d;
  const kv = cfg.num_key_value_heads * d;
  const f = cfg.intermediate_size;
  const linear = (name: string, out: number, inDim: number, bias: boolean): Array<[string, number[]]> =>
    bias
      ? [
          [`${name}.weight`, [out, inDim]],
          [`${name}.bias`, [out]],
        ]
      : [[`${name}.weight`, [out, inDim]]];
  // Llama's attention_bias biases o_proj too; Qwen2's o_proj has none.
  const oBias = cfg.attention_bias && cfg.model_type === 'llama';
  const out: Array<[string, number[]]> = [['model.embed_tokens.weight', [cfg.vocab_size, h]]];
  for (let i = 0; i < cfg.num_hidden_layers; i++) {
    const p = `model.layers.${i}.`;
    out.push(
      [`${p}input_layernorm.weight`, [h]],
      ...linear(`${p}self_attn.q_proj`, q, h, cfg.attention_bias),
      ...linear(`${p}self_attn.k_proj`, kv, h, cfg.attention_bias),
      ...linear(`${p}self_attn.v_proj`, kv, h, cfg.attention_bias),
      ...linear(`${p}self_attn.o_proj`, h, q, oBias),
      [`${p}post_attention_layernorm.weight`, [h]],
      ...linear(`${p}mlp.gate_proj`, f, h, cfg.mlp_bias),
      ...linear(`${p}mlp.up_proj`, f, h, cfg.mlp_bias),
      ...linear(`${p}mlp.down_proj`, h, f, cfg.mlp_bias),
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
