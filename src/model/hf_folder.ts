/**
 * An HF model folder (what `transformers` `save_pretrained` writes for a Qwen2ForCausalLM, float32) from
 * a starpo checkpoint's files: config.json with HF's Qwen2 keys, model.safetensors (already HF tensor
 * names, F32, tied lm_head left out as HF does), tokenizer.json in HF format (hf_tokenizer.ts),
 * tokenizer_config.json with the ChatML chat_template, special_tokens_map.json and generation_config.json.
 * `starpo export` writes it; `pretrain: DIR` (pretrained.ts) reads it back.
 */
import type { GeneratingArgs } from '../config/schema';
import { CHATML_TEMPLATE, EOS_TOKENS, PAD_TOKEN } from './chatml';
import { validateQwen2Config, type Qwen2Config } from './config';
import { toHfTokenizerJSON } from './hf_tokenizer';
import { tokenizerFromJSON, type Tokenizer } from './tokenizer';

/** The file names of an HF model folder that starpo writes and reads. */
export const HF_FILES = {
  config: 'config.json',
  weights: 'model.safetensors',
  weightsIndex: 'model.safetensors.index.json',
  tokenizer: 'tokenizer.json',
  tokenizerConfig: 'tokenizer_config.json',
  specialTokensMap: 'special_tokens_map.json',
  generationConfig: 'generation_config.json',
} as const;

/**
 * config.json of a Qwen2ForCausalLM: HF Qwen2Config's keys (transformers `configuration_qwen2.py`
 * defaults for what starpo's config lacks; no sliding window), the model's own keys over them,
 * torch_dtype float32 (checkpoints hold F32) and the token ids of the tokenizer.
 */
export function hfModelConfig(config: Qwen2Config, tokenizer: Tokenizer): Record<string, unknown> {
  return {
    architectures: ['Qwen2ForCausalLM'],
    attention_dropout: 0.0,
    hidden_act: 'silu',
    initializer_range: 0.02,
    max_window_layers: config.num_hidden_layers,
    rope_scaling: null,
    sliding_window: null,
    use_cache: true,
    use_sliding_window: false,
    ...config,
    bos_token_id: tokenizer.padId,
    eos_token_id: tokenizer.eosIds[0],
    model_type: 'qwen2',
    torch_dtype: 'float32',
  };
}

/** The id -> token string map of a tokenizer's special tokens (HF added_tokens_decoder). */
function addedTokensDecoder(tokenizer: Tokenizer): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(tokenizer.specialTokens).sort((a, b) => a[1] - b[1])
      .map(([content, id]) => [String(id), { content, lstrip: false, normalized: false, rstrip: false, single_word: false, special: true }]),
  );
}

/** The special tokens a tokenizer_config.json / special_tokens_map.json names (unk only when the tokenizer has one). */
function specialTokenNames(tokenizer: Tokenizer): Record<string, unknown> {
  const named = new Set<string>([PAD_TOKEN, EOS_TOKENS[0], '<unk>']);
  return {
    additional_special_tokens: Object.keys(tokenizer.specialTokens).filter((t) => !named.has(t)),
    eos_token: EOS_TOKENS[0],
    pad_token: PAD_TOKEN,
    ...('<unk>' in tokenizer.specialTokens ? { unk_token: '<unk>' } : {}),
  };
}

/** tokenizer_config.json: a PreTrainedTokenizerFast over tokenizer.json with starpo's ChatML chat_template. */
export function hfTokenizerConfig(tokenizer: Tokenizer, modelMaxLength: number): Record<string, unknown> {
  return {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: addedTokensDecoder(tokenizer),
    bos_token: null,
    chat_template: CHATML_TEMPLATE,
    clean_up_tokenization_spaces: false,
    errors: 'replace',
    model_max_length: modelMaxLength,
    split_special_tokens: false,
    tokenizer_class: 'PreTrainedTokenizerFast',
    ...specialTokenNames(tokenizer),
  };
}

/** generation_config.json: the tokenizer's pad/eos ids and, when given, the run's sampling settings. */
export function hfGenerationConfig(tokenizer: Tokenizer, generating?: GeneratingArgs): Record<string, unknown> {
  return {
    bos_token_id: tokenizer.padId,
    eos_token_id: [...tokenizer.eosIds],
    pad_token_id: tokenizer.padId,
    ...(generating
      ? { do_sample: generating.do_sample, temperature: generating.temperature, top_p: generating.top_p, top_k: generating.top_k, max_new_tokens: generating.max_new_tokens }
      : {}),
  };
}

const jsonBytes = (value: unknown) => new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`);
const parseJSON = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes)) as unknown;

/**
 * The files of an HF model folder, by name, from a checkpoint's files (storage/manifest readCheckpoint):
 * model.safetensors copied byte for byte, the JSON files derived from config.json and tokenizer.json.
 * @param generating the run's actor_infer.generating_args for generation_config.json (optional)
 * @throws Error when the checkpoint lacks model.safetensors, config.json or tokenizer.json, or they are invalid
 */
export function hfFolderFiles(checkpoint: Record<string, Uint8Array>, generating?: GeneratingArgs): Record<string, Uint8Array> {
  for (const name of [HF_FILES.weights, HF_FILES.config, HF_FILES.tokenizer]) {
    if (!checkpoint[name]) throw new Error(`checkpoint has no ${name}`);
  }
  const config = validateQwen2Config(parseJSON(checkpoint[HF_FILES.config] as Uint8Array));
  const tokenizerJSON = toHfTokenizerJSON(parseJSON(checkpoint[HF_FILES.tokenizer] as Uint8Array));
  const tokenizer = tokenizerFromJSON(tokenizerJSON);
  return {
    [HF_FILES.config]: jsonBytes(hfModelConfig(config, tokenizer)),
    [HF_FILES.weights]: checkpoint[HF_FILES.weights] as Uint8Array,
    [HF_FILES.tokenizer]: jsonBytes(tokenizerJSON),
    [HF_FILES.tokenizerConfig]: jsonBytes(hfTokenizerConfig(tokenizer, config.max_position_embeddings)),
    [HF_FILES.specialTokensMap]: jsonBytes(specialTokenNames(tokenizer)),
    [HF_FILES.generationConfig]: jsonBytes(hfGenerationConfig(tokenizer, generating)),
  };
}
