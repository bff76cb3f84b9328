/**
 * `pretrain: DIR`: an HF Qwen2 model folder (hf_folder.ts layout, e.g. one `starpo export` wrote, or a
 * Qwen2/Qwen2.5 checkpoint from the Hub) as the run's initial policy. `pretrainedProblems` checks it at
 * config time from config.json, tokenizer.json and the safetensors headers (no weights read, no tfjs);
 * `pretrainedIdentity` hashes its files (the warm-up cache key); weights_io.ts `modelFromFolder` loads it.
 * Weights: model.safetensors, or the shards a model.safetensors.index.json lists (F32, F16 or BF16).
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { activeSlidingWindow, validateQwen2Config, weightShapes, type Qwen2Config } from './config';
import { HF_FILES } from './hf_folder';
import { parseSafetensorsHeader, safetensorsHeaderLength, type SafeTensorInfo } from './safetensors';
import { readTokenizerFiles, tokenizerFromFiles, TOKENIZER_FILE_NAMES, type ChatTokenizer } from './tokenizer';

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
    throw new PretrainedFolderError(`${file}: ${(err as Error).message.replace(/^Qwen2Config: /, '')}`);
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
  if (!map || typeof map !== 'object') throw new PretrainedFolderError(`${indexFile}: weight_map is missing; allowed: a mapping from tensor name to shard file`);
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
        throw new Error(`tensor ${name} ends at data byte ${info.data_offsets[1]} but the file has ${dataBytes} data bytes (a truncated file?); allowed: a complete safetensors file`);
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
 * file and key: the folder, config.json (a valid Qwen2 config, max_position_embeddings >= sequenceLength, no
 * active sliding window shorter than sequenceLength),
 * tokenizer.json (loadable, ChatML tokens, ids < vocab_size) and each weight's name, dtype and shape in
 * the safetensors headers against config.json. Empty when it can be loaded.
 */
export function pretrainedProblems(dir: string, sequenceLength: number): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    return [`${dir} is not a folder; allowed: the preset "tiny" or an HF Qwen2 model folder (config.json, model.safetensors, tokenizer.json; Hub model ids are not downloaded: fetch the folder first, e.g. \`huggingface-cli download <id> --local-dir DIR\`)`];
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
    problems.push(`sequence_length ${sequenceLength} is more than ${configFile} max_position_embeddings (${config.max_position_embeddings}); allowed: sequence_length <= ${config.max_position_embeddings}`);
  }
  const sliding = config ? activeSlidingWindow(config) : null;
  if (sliding && sequenceLength > sliding.window) {
    problems.push(`${configFile}: sliding_window = ${sliding.window} is active (use_sliding_window true, ${sliding.because}) and shorter than sequence_length ${sequenceLength}; allowed: sequence_length <= ${sliding.window}, or a config whose layers all attend fully (sliding-window attention is not implemented)`);
  }
  if (config && tokenizer && tokenizer.vocabSize > config.vocab_size) {
    problems.push(`${join(dir, HF_FILES.tokenizer)} has ids up to ${tokenizer.vocabSize - 1}, more than ${configFile} vocab_size (${config.vocab_size}) allows`);
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
    if (!found) throw new PretrainedFolderError(`${join(dir, HF_FILES.weights)}: tensor ${name} is missing (${HF_FILES.config} needs shape [${shape}])`);
    if (!['F32', 'F16', 'BF16'].includes(found.info.dtype)) {
      throw new PretrainedFolderError(`${found.file}: tensor ${name} has dtype ${found.info.dtype}; allowed: F32, F16, BF16`);
    }
    if (found.info.shape.length !== shape.length || found.info.shape.some((d, i) => d !== shape[i])) {
      throw new PretrainedFolderError(`${found.file}: tensor ${name} has shape [${found.info.shape}], ${join(dir, HF_FILES.config)} needs [${shape}]`);
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
  const files = [join(dir, HF_FILES.config), join(dir, HF_FILES.tokenizer), ...chatFiles.map((name) => join(dir, name)), ...weightFiles(dir)];
  return Object.fromEntries(files.map((file) => {
    if (!existsSync(file)) throw new PretrainedFolderError(`${file} does not exist`);
    return [file.slice(dir.length).replace(/^\/+/, ''), createHash('sha256').update(readFileSync(file)).digest('hex')];
  }));
}
