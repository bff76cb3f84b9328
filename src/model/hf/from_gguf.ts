/**
 * A GGUF file (llama.cpp's format) as an HF model folder, converted once: config.json from the metadata,
 * model.safetensors with every tensor dequantised to float32 under transformers' names, the tokenizer files
 * (gguf_tokenizer.ts) and generation_config.json. It follows transformers' own GGUF loader
 * (modeling_gguf_pytorch_utils.py, integrations/ggml.py), which the fixtures come from, so the folder loads in
 * starpo and in transformers alike. Llama-architecture files only: the one real instruct model this project
 * reaches (SmolLM2) is one.
 */

import { writeFolderAtomically } from '../../util/atomic_folder';
import { GgufError } from '../gguf/error';
import { checkDequantizable, type GgufFile, readGguf, tensorFloat32 } from '../gguf/reader';
import { HF_FILES } from './folder';
import { ggufSpecialIds, ggufTokenizerConfig, ggufTokenizerJSON, ggufValue } from './gguf_tokenizer';
import { encodeSafetensors, type SafeTensor } from './safetensors';

/** llama.cpp's per-layer tensor names and transformers' for the Llama decoder. */
const LAYER_TENSORS: Record<string, string> = {
  'attn_norm.weight': 'input_layernorm.weight',
  'attn_q.weight': 'self_attn.q_proj.weight',
  'attn_k.weight': 'self_attn.k_proj.weight',
  'attn_v.weight': 'self_attn.v_proj.weight',
  'attn_output.weight': 'self_attn.o_proj.weight',
  'ffn_norm.weight': 'post_attention_layernorm.weight',
  'ffn_gate.weight': 'mlp.gate_proj.weight',
  'ffn_up.weight': 'mlp.up_proj.weight',
  'ffn_down.weight': 'mlp.down_proj.weight',
};
const TOP_TENSORS: Record<string, string> = {
  'token_embd.weight': 'model.embed_tokens.weight',
  'output_norm.weight': 'model.norm.weight',
  'output.weight': 'lm_head.weight',
};

/** transformers' name of a GGUF tensor, or null for one the Llama decoder has no place for. */
function hfName(name: string): string | null {
  if (TOP_TENSORS[name]) return TOP_TENSORS[name];
  const m = /^blk\.(\d+)\.(.+)$/.exec(name);
  const inLayer = m ? LAYER_TENSORS[m[2] as string] : undefined;
  return m && inLayer ? `model.layers.${m[1]}.${inLayer}` : null;
}

/**
 * Undoes llama.cpp's q/k row order. Its converter interleaves the two rotary halves of each head (rows
 * h*D + 2i + j hold transformers' rows h*D + j*D/2 + i); transformers' loader reverses that, and so does this.
 */
export function unpermuteRows(w: Float32Array, rows: number, cols: number, heads: number): Float32Array {
  const half = rows / heads / 2;
  const out = new Float32Array(w.length);
  for (let h = 0; h < heads; h++)
    for (let j = 0; j < 2; j++)
      for (let i = 0; i < half; i++) {
        const to = (h * 2 * half + j * half + i) * cols;
        const from = (h * 2 * half + 2 * i + j) * cols;
        out.set(w.subarray(from, from + cols), to);
      }
  return out;
}

const need = (g: GgufFile, key: string): number => {
  const v = ggufValue<number>(g, key, 'number');
  if (v === undefined) throw new GgufError(`${g.path}: metadata ${key} is missing; allowed: a Llama GGUF with its hyper-parameters`);
  return v;
};

/**
 * config.json of the file's model, with the keys transformers' GGUF loader sets (GGUF_CONFIG_MAPPING "llama")
 * and its defaults for the rest. A missing output.weight means the head is tied to the embedding.
 * @throws GgufError for another architecture, scaled RoPE, experts, or a missing hyper-parameter
 */
export function ggufModelConfig(g: GgufFile): Record<string, unknown> {
  const arch = ggufValue<string>(g, 'general.architecture', 'string');
  if (arch !== 'llama') {
    throw new GgufError(`${g.path}: general.architecture = ${JSON.stringify(arch ?? null)} is not supported; allowed: "llama"`);
  }
  const scaling = ggufValue<string>(g, 'llama.rope.scaling.type', 'string');
  if (scaling !== undefined && scaling !== 'none') {
    throw new GgufError(
      `${g.path}: llama.rope.scaling.type = ${JSON.stringify(scaling)} is not supported; allowed: "none" (scaled RoPE is not implemented)`,
    );
  }
  const experts = ggufValue<number>(g, 'llama.expert_count', 'number') ?? 0;
  if (experts > 0)
    throw new GgufError(`${g.path}: llama.expert_count = ${experts} is not supported; allowed: 0 (mixture-of-experts is not implemented)`);
  const heads = need(g, 'llama.attention.head_count');
  const hidden = need(g, 'llama.embedding_length');
  const tokens = ggufValue<string[]>(g, 'tokenizer.ggml.tokens', 'strings') ?? [];
  const ids = ggufSpecialIds(g);
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    vocab_size: ggufValue<number>(g, 'llama.vocab_size', 'number') ?? tokens.length,
    hidden_size: hidden,
    intermediate_size: need(g, 'llama.feed_forward_length'),
    num_hidden_layers: need(g, 'llama.block_count'),
    num_attention_heads: heads,
    num_key_value_heads: ggufValue<number>(g, 'llama.attention.head_count_kv', 'number') ?? heads,
    head_dim: ggufValue<number>(g, 'llama.rope.dimension_count', 'number') ?? hidden / heads,
    hidden_act: 'silu',
    max_position_embeddings: need(g, 'llama.context_length'),
    rms_norm_eps: need(g, 'llama.attention.layer_norm_rms_epsilon'),
    rope_theta: ggufValue<number>(g, 'llama.rope.freq_base', 'number') ?? 10000,
    attention_bias: false,
    mlp_bias: false,
    tie_word_embeddings: !g.tensors.has('output.weight'),
    ...(ids.bos === undefined ? {} : { bos_token_id: ids.bos }),
    ...(ids.eos === undefined ? {} : { eos_token_id: ids.eos }),
    ...(ids.pad === undefined ? {} : { pad_token_id: ids.pad }),
    dtype: 'float32',
  };
}

/**
 * Every tensor as float32 under transformers' name, q and k rows back in transformers' order.
 * @throws GgufError naming a tensor the Llama decoder has no place for, or of a type that is not decoded
 */
export function ggufTensors(g: GgufFile, config: Record<string, unknown>): Record<string, SafeTensor> {
  const out: Record<string, SafeTensor> = {};
  for (const t of g.tensors.values()) {
    const name = hfName(t.name);
    if (!name)
      throw new GgufError(
        `${g.path}: tensor ${t.name} (${t.typeName}) has no place in a Llama decoder; allowed: ${[...Object.keys(TOP_TENSORS), ...Object.keys(LAYER_TENSORS).map((n) => `blk.N.${n}`)].join(', ')}`,
      );
    let data = tensorFloat32(g, t);
    const [rows, cols] = [t.shape[0] as number, t.shape[1] as number];
    if (name.endsWith('q_proj.weight')) data = unpermuteRows(data, rows, cols, config.num_attention_heads as number);
    if (name.endsWith('k_proj.weight')) data = unpermuteRows(data, rows, cols, config.num_key_value_heads as number);
    out[name] = { dtype: 'F32', shape: t.shape, data };
  }
  return out;
}

const jsonBytes = (value: unknown) => new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`);

/**
 * The files of the HF folder of a GGUF file, by name.
 * @throws GgufError naming the file, and the tensor or metadata key, for anything not converted
 */
export function ggufFolderFiles(file: string): Record<string, Uint8Array> {
  const g = readGguf(file);
  checkDequantizable(g); // the file's tensors first: a type not decoded is refused before its metadata is read
  const config = ggufModelConfig(g);
  const tokenizerConfig = ggufTokenizerConfig(g, config.max_position_embeddings as number);
  const tokenizer = ggufTokenizerJSON(g);
  const tensors = ggufTensors(g, config);
  const ids = ggufSpecialIds(g);
  const generation = { bos_token_id: ids.bos, eos_token_id: ids.eos, pad_token_id: ids.pad };
  return {
    [HF_FILES.config]: jsonBytes(config),
    [HF_FILES.generationConfig]: jsonBytes(generation),
    [HF_FILES.tokenizer]: new TextEncoder().encode(JSON.stringify(tokenizer)),
    [HF_FILES.tokenizerConfig]: jsonBytes(tokenizerConfig),
    [HF_FILES.weights]: encodeSafetensors(tensors, { format: 'pt' }),
  };
}

/**
 * Converts `file` into the HF folder `dir`, written whole or not at all (util/atomic_folder.ts). Returns `dir`.
 * @throws GgufError for a file that is not converted; Error when `dir` exists and is not empty
 */
export function convertGguf(file: string, dir: string): string {
  writeFolderAtomically(dir, ggufFolderFiles(file));
  return dir;
}
