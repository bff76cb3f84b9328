/**
 * An HF Qwen2 or Llama model folder, read and written; the entry of src/model/hf/. Read (`pretrain: DIR`, a Hub checkpoint
 * or a `starpo export`): `pretrainedProblems` checks it at config time without tfjs (config.json, the tokenizer
 * files of tokenizer.ts, the headers of safetensors.ts), `pretrainedIdentity` hashes its files, weights.ts
 * `modelFromFolder` loads it. Written (`starpo export`): `hfFolderFiles` makes the folder from a checkpoint's files.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { GeneratingArgs } from '../../contract';
import { ARCHITECTURES, activeSlidingWindow, headDim, type Qwen2Config, validateQwen2Config, weightShapes } from '../config';
import { type CharTokenizerJSON, type ChatTokenizer, EOS_TOKENS, PAD_TOKEN, type Tokenizer } from '../tokenizer';
import { parseSafetensorsHeader, type SafeTensorInfo, safetensorsHeaderLength } from './safetensors';
import {
  CHAT_FILES,
  charTokenizerHfJSON,
  charTokens,
  isHfTokenizerJSON,
  readTokenizerFiles,
  TOKENIZER_FILE_NAMES,
  tokenizerFromFiles,
} from './tokenizer';

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

// ---------------------------------------------------------------------------------------------------------
// Reading

/** A problem with a pretrained folder; the message names the file and, where one is at fault, the key. */
export class PretrainedFolderError extends Error {
  override name = 'PretrainedFolderError';
}

function readJSON(file: string): unknown {
  if (!existsSync(file)) throw new PretrainedFolderError(`${file} does not exist`);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new PretrainedFolderError(`${file} is not valid JSON (${(err as Error).message})`);
  }
}

/** config.json, validated. @throws PretrainedFolderError naming the file and the key */
export function readPretrainedConfig(dir: string): Qwen2Config {
  const file = join(dir, HF_FILES.config);
  try {
    return validateQwen2Config(readJSON(file));
  } catch (err) {
    if (err instanceof PretrainedFolderError) throw err;
    throw new PretrainedFolderError(`${file}: ${(err as Error).message.replace(/^(Qwen2|Llama)Config: /, '')}`);
  }
}

/**
 * tokenizer.json with the folder's chat template and stop tokens (tokenizer_config.json,
 * chat_template.jinja, generation_config.json) as a ChatTokenizer.
 * @throws PretrainedFolderError naming the file and key
 */
export function readPretrainedTokenizer(dir: string): ChatTokenizer {
  try {
    return tokenizerFromFiles(readTokenizerFiles(dir), (name) => join(dir, name));
  } catch (err) {
    throw new PretrainedFolderError((err as Error).message);
  }
}

/**
 * The weight files of `dir`: model.safetensors, else the shards of model.safetensors.index.json (its
 * weight_map values), absolute when `dir` is.
 * @throws PretrainedFolderError when neither exists or the index has no weight_map
 */
export function weightFiles(dir: string): string[] {
  const single = join(dir, HF_FILES.weights);
  if (existsSync(single)) return [single];
  const indexFile = join(dir, HF_FILES.weightsIndex);
  if (!existsSync(indexFile)) throw new PretrainedFolderError(`${single} does not exist (nor ${HF_FILES.weightsIndex})`);
  const map = (readJSON(indexFile) as { weight_map?: unknown } | null)?.weight_map;
  if (!map || typeof map !== 'object')
    throw new PretrainedFolderError(`${indexFile}: weight_map is missing; allowed: a mapping from tensor name to shard file`);
  return [...new Set(Object.values(map as Record<string, string>))].sort().map((f) => join(dir, f));
}

/** The header entries of a safetensors file, read without its data. */
function headerOf(file: string): Record<string, SafeTensorInfo> {
  if (!existsSync(file)) throw new PretrainedFolderError(`${file} does not exist`);
  const fd = openSync(file, 'r');
  try {
    const first8 = new Uint8Array(8);
    readSync(fd, first8, 0, 8, 0);
    const n = safetensorsHeaderLength(first8);
    if (8 + n > statSync(file).size) throw new Error(`header length ${n} exceeds the file size`);
    const header = new Uint8Array(n);
    readSync(fd, header, 0, n, 8);
    const { entries } = parseSafetensorsHeader(header);
    // A cut-short file (an interrupted download) has a whole header: its data must still reach every tensor's end.
    const dataBytes = statSync(file).size - 8 - n;
    for (const [name, info] of Object.entries(entries)) {
      if (info.data_offsets[1] > dataBytes) {
        throw new Error(
          `tensor ${name} ends at data byte ${info.data_offsets[1]} but the file has ${dataBytes} data bytes (a truncated file?); allowed: a complete safetensors file`,
        );
      }
    }
    return entries;
  } catch (err) {
    if (err instanceof PretrainedFolderError) throw err;
    throw new PretrainedFolderError(`${file}: ${(err as Error).message.replace(/^safetensors: /, '')}`);
  } finally {
    closeSync(fd);
  }
}

/**
 * Every problem of `dir` as an initial policy for a run with `sequenceLength`, one line each naming the
 * file and key: the folder, config.json (a valid Qwen2 or Llama config, max_position_embeddings >= sequenceLength, no
 * active sliding window shorter than sequenceLength),
 * tokenizer.json (loadable, ChatML tokens, ids < vocab_size) and each weight's name, dtype and shape in
 * the safetensors headers against config.json. Empty when it can be loaded.
 */
export function pretrainedProblems(dir: string, sequenceLength: number): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    return [
      `${dir} is not a folder; allowed: the preset "tiny" or an HF Qwen2 or Llama model folder (config.json, model.safetensors, tokenizer.json; Hub model ids are not downloaded: fetch the folder first, e.g. \`huggingface-cli download <id> --local-dir DIR\`)`,
    ];
  }
  const problems: string[] = [];
  const attempt = <T>(fn: () => T): T | null => {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof PretrainedFolderError)) throw err;
      problems.push(err.message);
      return null;
    }
  };
  const config = attempt(() => readPretrainedConfig(dir));
  const tokenizer = attempt(() => readPretrainedTokenizer(dir));
  const configFile = join(dir, HF_FILES.config);
  if (config && sequenceLength > config.max_position_embeddings) {
    problems.push(
      `sequence_length ${sequenceLength} is more than ${configFile} max_position_embeddings (${config.max_position_embeddings}); allowed: sequence_length <= ${config.max_position_embeddings}`,
    );
  }
  const sliding = config ? activeSlidingWindow(config) : null;
  if (sliding && sequenceLength > sliding.window) {
    problems.push(
      `${configFile}: sliding_window = ${sliding.window} is active (${sliding.because}) and shorter than sequence_length ${sequenceLength}; allowed: sequence_length <= ${sliding.window}, or a config whose layers all attend fully (sliding-window attention is not implemented)`,
    );
  }
  if (config && tokenizer && tokenizer.vocabSize > config.vocab_size) {
    problems.push(
      `${join(dir, HF_FILES.tokenizer)} has ids up to ${tokenizer.vocabSize - 1}, more than ${configFile} vocab_size (${config.vocab_size}) allows`,
    );
  }
  if (config) attempt(() => checkWeightShapes(dir, config));
  return problems;
}

/** @throws PretrainedFolderError for the first weight missing, of an unsupported dtype or of the wrong shape */
function checkWeightShapes(dir: string, config: Qwen2Config): void {
  const where = new Map<string, { file: string; info: SafeTensorInfo }>();
  for (const file of weightFiles(dir)) for (const [name, info] of Object.entries(headerOf(file))) where.set(name, { file, info });
  for (const [name, shape] of weightShapes(config)) {
    const found = where.get(name);
    if (!found)
      throw new PretrainedFolderError(
        `${join(dir, HF_FILES.weights)}: tensor ${name} is missing (${HF_FILES.config} needs shape [${shape}])`,
      );
    if (!['F32', 'F16', 'BF16'].includes(found.info.dtype)) {
      throw new PretrainedFolderError(`${found.file}: tensor ${name} has dtype ${found.info.dtype}; allowed: F32, F16, BF16`);
    }
    if (found.info.shape.length !== shape.length || found.info.shape.some((d, i) => d !== shape[i])) {
      throw new PretrainedFolderError(
        `${found.file}: tensor ${name} has shape [${found.info.shape}], ${join(dir, HF_FILES.config)} needs [${shape}]`,
      );
    }
  }
}

/**
 * sha256 (hex) of each file that defines the model (config.json, tokenizer.json, the chat files, the weight files), by
 * file name: the same folder contents give the same identity wherever the folder lives.
 * @throws PretrainedFolderError when a file is missing
 */
export function pretrainedIdentity(dir: string): Record<string, string> {
  const chatFiles = TOKENIZER_FILE_NAMES.filter((name) => name !== HF_FILES.tokenizer && existsSync(join(dir, name)));
  const files = [
    join(dir, HF_FILES.config),
    join(dir, HF_FILES.tokenizer),
    ...chatFiles.map((name) => join(dir, name)),
    ...weightFiles(dir),
  ];
  return Object.fromEntries(
    files.map((file) => {
      if (!existsSync(file)) throw new PretrainedFolderError(`${file} does not exist`);
      return [file.slice(dir.length).replace(/^\/+/, ''), createHash('sha256').update(readFileSync(file)).digest('hex')];
    }),
  );
}

// ---------------------------------------------------------------------------------------------------------
// Writing: an HF folder from a checkpoint's files, read alike by transformers 4 and 5 (AutoModelForCausalLM,
// AutoTokenizer): config.json with only the keys of the model starpo computes (float32, plain RoPE spelled
// `rope_theta`, no sliding window), model.safetensors copied byte for byte (HF tensor names, F32, tied lm_head
// left out as HF does), the tokenizer files, and generation_config.json with the stop ids and the run's sampling
// settings. A model that came from an HF folder keeps the source's own tokenizer files (tokenizer.json,
// tokenizer_config.json, chat_template.jinja); the `tiny` preset's char tokenizer is written as an HF
// tokenizer.json (hf/tokenizer.ts charTokenizerHfJSON) with its ChatML chat template.

/**
 * config.json of a Qwen2ForCausalLM or LlamaForCausalLM: the keys of the model starpo computes, none copied from
 * the source. `rope_theta` at the top level is the spelling both versions read (transformers 4 ignores
 * `rope_parameters`, 5 converts `rope_theta` into it); `dtype` float32 is what the checkpoint holds and
 * what transformers 5 loads by default from it (4.56+ reads the same key; older ones load float32 anyway).
 * Qwen2 states that no layer slides; Llama has no sliding window but states its biases and head_dim, which
 * its config reads (Qwen2's biases are fixed by its modeling code).
 */
export function hfModelConfig(config: Qwen2Config, tokenizer: Tokenizer): Record<string, unknown> {
  const architecture =
    config.model_type === 'llama'
      ? { attention_bias: config.attention_bias, mlp_bias: config.mlp_bias, head_dim: headDim(config) }
      : { use_sliding_window: false };
  return {
    architectures: [ARCHITECTURES[config.model_type]],
    model_type: config.model_type,
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
    ...architecture,
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
  const sampling = generating?.do_sample && generating.temperature > 0;
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
