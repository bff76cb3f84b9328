/**
 * An HF model folder from a starpo checkpoint's files, read alike by transformers 4 and 5
 * (AutoModelForCausalLM, AutoTokenizer): config.json with only the keys of the model starpo computes
 * (float32, plain RoPE spelled `rope_theta`, no sliding window), model.safetensors copied byte for byte
 * (HF tensor names, F32, tied lm_head left out as HF does), the tokenizer files, and
 * generation_config.json with the stop ids and the run's sampling settings. The tokenizer files of a
 * model that came from an HF folder are the source's own, as the checkpoint keeps them
 * (tokenizer.json, tokenizer_config.json, chat_template.jinja); the `tiny` preset's char tokenizer is
 * written as hf_char_tokenizer.ts describes, with its ChatML chat template.
 * `starpo export` writes it; `pretrain: DIR` (pretrained.ts) reads it back.
 */
import type { GeneratingArgs } from '../contract';
import { EOS_TOKENS, PAD_TOKEN } from './chatml';
import { CHAT_FILES } from './chat_template';
import { validateQwen2Config, type Qwen2Config } from './config';
import { charTokenizerHfJSON, charTokens } from './hf_char_tokenizer';
import { isHfTokenizerJSON } from './hf_tokenizer';
import { tokenizerFromFiles, type CharTokenizerJSON, type ChatTokenizer, type Tokenizer } from './tokenizer';

/** The file names of an HF model folder that starpo writes and reads. */
export const HF_FILES = {
  config: 'config.json',
  weights: 'model.safetensors',
  weightsIndex: 'model.safetensors.index.json',
  tokenizer: 'tokenizer.json',
  tokenizerConfig: CHAT_FILES.tokenizerConfig,
  chatTemplate: CHAT_FILES.template,
  specialTokensMap: 'special_tokens_map.json',
  generationConfig: CHAT_FILES.generationConfig,
} as const;

/**
 * config.json of a Qwen2ForCausalLM: the keys of the model starpo computes, none copied from the
 * source. `rope_theta` at the top level is the spelling both versions read (transformers 4 ignores
 * `rope_parameters`, 5 converts `rope_theta` into it); `dtype` float32 is what the checkpoint holds and
 * what transformers 5 loads by default from it (4.56+ reads the same key; older ones load float32 anyway).
 */
export function hfModelConfig(config: Qwen2Config, tokenizer: Tokenizer): Record<string, unknown> {
  return {
    architectures: ['Qwen2ForCausalLM'],
    model_type: 'qwen2',
    vocab_size: config.vocab_size,
    hidden_size: config.hidden_size,
    intermediate_size: config.intermediate_size,
    num_hidden_layers: config.num_hidden_layers,
    num_attention_heads: config.num_attention_heads,
    num_key_value_heads: config.num_key_value_heads,
    hidden_act: 'silu',
    max_position_embeddings: config.max_position_embeddings,
    rope_theta: config.rope_theta,
    rms_norm_eps: config.rms_norm_eps,
    tie_word_embeddings: config.tie_word_embeddings,
    attention_dropout: 0.0,
    use_sliding_window: false,
    bos_token_id: tokenizer.padId,
    eos_token_id: tokenizer.eosIds[0],
    dtype: 'float32',
  };
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

/**
 * tokenizer_config.json of the char tokenizer: every token in added_tokens_decoder (transformers 5
 * takes the added tokens from here) and the model's chat template. transformers 4 loads tokenizer.json
 * as written (PreTrainedTokenizerFast); 5 uses Qwen2Tokenizer for any qwen2 folder whatever this says.
 */
export function charTokenizerConfig(spec: CharTokenizerJSON, tokenizer: ChatTokenizer, modelMaxLength: number): Record<string, unknown> {
  return {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(charTokens(spec).map(({ id, ...token }) => [String(id), token])),
    bos_token: null,
    chat_template: tokenizer.chat.source,
    clean_up_tokenization_spaces: false,
    errors: 'replace',
    model_max_length: modelMaxLength,
    split_special_tokens: false,
    tokenizer_class: 'PreTrainedTokenizerFast',
    ...specialTokenNames(tokenizer),
  };
}

/**
 * generation_config.json: pad, bos and the stop ids, and with the run's generating_args its budget and
 * sampling settings (sampling keys only when it samples: starpo decodes greedily at temperature 0).
 */
export function hfGenerationConfig(tokenizer: Tokenizer, generating?: GeneratingArgs): Record<string, unknown> {
  const sampling = generating !== undefined && generating.do_sample && generating.temperature > 0;
  return {
    bos_token_id: tokenizer.padId,
    eos_token_id: [...tokenizer.eosIds],
    pad_token_id: tokenizer.padId,
    ...(generating ? { max_new_tokens: generating.max_new_tokens, do_sample: sampling } : {}),
    ...(sampling ? { temperature: generating.temperature, top_p: generating.top_p, top_k: generating.top_k } : {}),
  };
}

const jsonBytes = (value: unknown) => new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`);
const parseJSON = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes)) as unknown;

/**
 * The files of an HF model folder, by name, from a checkpoint's files (storage/manifest readCheckpoint).
 * @param generating the run's actor_infer.generating_args for generation_config.json (optional)
 * @throws Error naming the file when the checkpoint lacks model.safetensors, config.json or
 *   tokenizer.json, or they (or its chat files) are invalid
 */
export function hfFolderFiles(checkpoint: Record<string, Uint8Array>, generating?: GeneratingArgs): Record<string, Uint8Array> {
  for (const name of [HF_FILES.weights, HF_FILES.config, HF_FILES.tokenizer]) {
    if (!checkpoint[name]) throw new Error(`checkpoint has no ${name}`);
  }
  const config = validateQwen2Config(parseJSON(checkpoint[HF_FILES.config] as Uint8Array));
  const tokenizer = tokenizerFromFiles(checkpoint);
  const tokenizerJSON = tokenizer.toJSON(); // already parsed: a Qwen tokenizer.json is megabytes
  const tokenizerFiles: Record<string, Uint8Array> = {};
  if (isHfTokenizerJSON(tokenizerJSON)) {
    for (const name of [HF_FILES.tokenizer, HF_FILES.tokenizerConfig, HF_FILES.chatTemplate]) {
      if (checkpoint[name]) tokenizerFiles[name] = checkpoint[name] as Uint8Array;
    }
  } else {
    const spec = tokenizerJSON as CharTokenizerJSON;
    tokenizerFiles[HF_FILES.tokenizer] = jsonBytes(charTokenizerHfJSON(spec));
    tokenizerFiles[HF_FILES.tokenizerConfig] = jsonBytes(charTokenizerConfig(spec, tokenizer, config.max_position_embeddings));
    tokenizerFiles[HF_FILES.specialTokensMap] = jsonBytes(specialTokenNames(tokenizer));
  }
  return {
    [HF_FILES.config]: jsonBytes(hfModelConfig(config, tokenizer)),
    [HF_FILES.weights]: checkpoint[HF_FILES.weights] as Uint8Array,
    ...tokenizerFiles,
    [HF_FILES.generationConfig]: jsonBytes(hfGenerationConfig(tokenizer, generating)),
  };
}
