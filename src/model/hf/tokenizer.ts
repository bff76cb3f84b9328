/**
 * The tokenizer files of an HF model folder (or a checkpoint) as a ChatTokenizer: tokenizer.json (loaded with
 * @huggingface/tokenizers, or starpo's char tokenizer), the chat template (chat_template.jinja, else
 * tokenizer_config.json `chat_template`) and the stop ids (generation_config.json), as transformers 5 reads them
 * (tokenization_utils_base.py from_pretrained, get_chat_template). Also the char tokenizer as a tokenizer.json.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer as HfLibTokenizer } from '@huggingface/tokenizers';
import {
  CharTokenizer,
  type CharTokenizerJSON,
  ChatTemplate,
  type ChatTokenizer,
  charChatTokenizer,
  EOS_TOKENS,
  PAD_TOKEN,
  REQUIRED_TOKENS,
  type Tokenizer,
  withChat,
} from '../tokenizer';

// ---------------------------------------------------------------------------------------------------------
// tokenizer.json

/** One `added_tokens` entry of tokenizer.json. */
export interface HfAddedToken {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

/** A parsed HF tokenizer.json (the fields starpo reads; the rest is passed to the library as is). */
export interface HfTokenizerJSON {
  model: { type?: string; vocab?: unknown; [k: string]: unknown };
  added_tokens: HfAddedToken[];
  [k: string]: unknown;
}

/** True for a parsed HF tokenizer.json: an object with a `model` object and an `added_tokens` list. */
export function isHfTokenizerJSON(json: unknown): json is HfTokenizerJSON {
  const j = json as Partial<HfTokenizerJSON> | null;
  return !!j && typeof j === 'object' && !!j.model && typeof j.model === 'object' && Array.isArray(j.added_tokens);
}

class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly padId: number;
  readonly eosIds: readonly number[];
  readonly specialTokens: Record<string, number>;
  private readonly lib: HfLibTokenizer;

  constructor(private readonly json: HfTokenizerJSON) {
    this.lib = new HfLibTokenizer(json, { clean_up_tokenization_spaces: false });
    const vocab = this.lib.get_vocab(true);
    this.vocabSize = [...vocab.values()].reduce((max, id) => Math.max(max, id), -1) + 1; // no spread: a whole vocabulary as arguments overflows the stack
    this.specialTokens = Object.fromEntries(json.added_tokens.filter((t) => t.special).map((t) => [t.content, t.id]));
    const missing = REQUIRED_TOKENS.filter((t) => vocab.get(t) === undefined);
    if (missing.length > 0) {
      throw new Error(
        `tokenizer.json: token(s) ${missing.map((t) => JSON.stringify(t)).join(', ')} missing; starpo's ChatML prompts need ${REQUIRED_TOKENS.join(', ')}`,
      );
    }
    this.padId = vocab.get(PAD_TOKEN) as number;
    this.eosIds = EOS_TOKENS.map((t) => vocab.get(t) as number);
  }

  encode(text: string): number[] {
    return this.lib.encode(text, { add_special_tokens: false }).ids;
  }

  /**
   * Ids past the tokenizer's vocabulary decode as nothing, as in transformers: a model's embedding is often padded
   * past it (Qwen2.5: 151,936 rows, 151,665 tokens), and sampling can draw those ids.
   * @throws RangeError on a negative or non-integer id
   */
  decode(ids: readonly number[], skipSpecial = false): string {
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0) throw new RangeError(`Tokenizer.decode: id ${id}; allowed: integers >= 0`);
    }
    const known = ids.filter((id) => id < this.vocabSize);
    if (known.length === 0) return ''; // the library refuses empty input
    return this.lib.decode(known, { skip_special_tokens: skipSpecial, clean_up_tokenization_spaces: false });
  }

  toJSON(): HfTokenizerJSON {
    return this.json;
  }
}

/**
 * A Tokenizer over a parsed HF tokenizer.json. vocabSize = largest id + 1 (model vocab and added tokens);
 * padId = `<|endoftext|>`, eosIds = [`<|im_end|>`, `<|endoftext|>`] (docs/numerics.md §4.3).
 * @throws Error when the library rejects the file (unsupported model type, malformed fields) or a ChatML
 *   token (`<|im_start|>`, `<|im_end|>`, `<|endoftext|>`) is missing.
 */
export function hfTokenizer(json: HfTokenizerJSON): Tokenizer {
  return new HfTokenizer(json);
}

/** transformers' models/qwen2/tokenization_qwen2.py PRETOKENIZE_REGEX (as in Qwen2.5's tokenizer.json). */
const QWEN2_SPLIT_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const BYTE_LEVEL = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };

/** Every token of the char tokenizer in id order: the special tokens, then the characters. */
export function charTokens(spec: CharTokenizerJSON): HfAddedToken[] {
  return [...spec.special, ...spec.chars].map((content, id) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: id < spec.special.length,
  }));
}

/**
 * starpo's char tokenizer as an HF tokenizer.json that transformers 4 and 5 both encode with starpo's ids.
 * transformers 5's AutoTokenizer gives every `model_type: qwen2` folder its Qwen2Tokenizer, which keeps only the
 * vocab and merges of tokenizer.json and rebuilds Qwen2's own pipeline around them (NFC, Qwen2's split regex,
 * byte-level pre-tokenizer and decoder, no unknown token): a plain character vocabulary then loses spaces,
 * newlines and '√'. So every character is an added token, matched on the raw text before that pipeline runs,
 * with the same id as in the vocab, and the file states Qwen2's pipeline itself, so transformers 4 (which runs
 * the file as written), 5 and starpo's own reader agree. The byte-level decoder passes added tokens through.
 * Characters outside the alphabet reach the byte-level BPE, find no entry and are dropped (starpo's char
 * tokenizer maps them to `<unk>`); transformers 5 cannot be told otherwise.
 */
export function charTokenizerHfJSON(spec: CharTokenizerJSON): HfTokenizerJSON {
  const tokens = charTokens(spec);
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: tokens,
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [{ type: 'Split', pattern: { Regex: QWEN2_SPLIT_REGEX }, behavior: 'Isolated', invert: false }, BYTE_LEVEL],
    },
    post_processor: null,
    decoder: BYTE_LEVEL,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      vocab: Object.fromEntries(tokens.map((t) => [t.content, t.id])),
      merges: [],
    },
  };
}

/**
 * Rebuilds a tokenizer from a parsed tokenizer.json: starpo's char tokenizer (`toJSON()` output, type
 * 'starpo-char') or an HF tokenizer.json (an object with `model` and `added_tokens`).
 * @throws Error when it is neither, or the description is inconsistent (duplicate chars, eos/pad/unk not
 *   among the special tokens; for HF files see hfTokenizer).
 */
export function tokenizerFromJSON(json: unknown): Tokenizer {
  if (isHfTokenizerJSON(json)) return hfTokenizer(json);
  const j = json as Partial<CharTokenizerJSON> | null;
  if (!j || typeof j !== 'object' || j.type !== 'starpo-char') {
    throw new Error(
      `tokenizerFromJSON: type = ${JSON.stringify(j && (j as { type?: unknown }).type)} is not supported; allowed: 'starpo-char' or an HF tokenizer.json (with model and added_tokens)`,
    );
  }
  for (const k of ['special', 'chars', 'eos'] as const) {
    if (!Array.isArray(j[k])) throw new Error(`tokenizerFromJSON: field ${k} must be an array of strings`);
  }
  for (const k of ['unk', 'pad'] as const) {
    if (typeof j[k] !== 'string') throw new Error(`tokenizerFromJSON: field ${k} must be a string`);
  }
  return new CharTokenizer(j as CharTokenizerJSON);
}

// ---------------------------------------------------------------------------------------------------------
// The chat files: tokenizer_config.json, chat_template.jinja, generation_config.json

/** File names of a model folder that define its prompts and stop tokens (besides tokenizer.json). */
export const CHAT_FILES = {
  tokenizerConfig: 'tokenizer_config.json',
  template: 'chat_template.jinja',
  generationConfig: 'generation_config.json',
} as const;

/** The named special tokens transformers hands a chat template (PreTrainedTokenizerBase.SPECIAL_TOKENS_ATTRIBUTES). */
const SPECIAL_TOKEN_NAMES = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token'] as const;

/** A problem with a folder's chat files; the message names the file, the key and what is allowed. */
export class ChatTemplateError extends Error {
  override name = 'ChatTemplateError';
}

/** A tokenizer_config.json token entry as a string: the string itself, or an AddedToken's `content`. */
function tokenString(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string')
    return (value as { content: string }).content;
  return null;
}

/** The named special tokens a tokenizer_config.json sets (as strings; unset or null ones left out). */
export function namedSpecialTokens(tokenizerConfig: Readonly<Record<string, unknown>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of SPECIAL_TOKEN_NAMES) {
    const token = tokenString(tokenizerConfig[name]);
    if (token !== null) out[name] = token;
  }
  return out;
}

/**
 * The chat template source of a folder: chat_template.jinja when present (it takes priority, as in
 * transformers), else tokenizer_config.json `chat_template`: a string, or a list of {name, template}
 * entries of which the one named "default" is used.
 * @param where the path shown for each file in errors (e.g. the folder's path joined with the name)
 * @throws ChatTemplateError when there is no template, or `chat_template` has another shape
 */
export function chatTemplateSource(
  tokenizerConfig: Readonly<Record<string, unknown>>,
  jinjaFile: string | null,
  where: (file: string) => string = (f) => f,
): string {
  if (jinjaFile !== null) return jinjaFile;
  const file = where(CHAT_FILES.tokenizerConfig);
  const allowed = `allowed: a Jinja string, or a list of {name, template} with one named "default"; or a ${where(CHAT_FILES.template)} file`;
  const value = tokenizerConfig.chat_template;
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) {
    throw new ChatTemplateError(
      `${file}: chat_template is missing (and there is no ${CHAT_FILES.template}); starpo renders prompts with the model's own chat template; ${allowed}`,
    );
  }
  if (Array.isArray(value)) {
    const entry = value.find((t) => t && typeof t === 'object' && (t as { name?: unknown }).name === 'default') as
      | { template?: unknown }
      | undefined;
    if (entry && typeof entry.template === 'string') return entry.template;
    const names = value.map((t) => (t && typeof t === 'object' ? (t as { name?: unknown }).name : t));
    throw new ChatTemplateError(
      `${file}: chat_template lists templates ${JSON.stringify(names)} but none named "default" with a string template; ${allowed}`,
    );
  }
  throw new ChatTemplateError(`${file}: chat_template is ${JSON.stringify(value)}; ${allowed}`);
}

/**
 * The ids that end a response: generation_config.json `eos_token_id` (an int or a list of ints), else
 * (no generation_config.json, or no eos_token_id in it) the tokenizer's eos (tokenizer_config.json eos_token).
 * @param idOf the id of a token string in the tokenizer's vocabulary (undefined when absent)
 * @throws ChatTemplateError when eos_token_id is of another shape or out of range, or neither file names a stop token
 */
export function stopTokenIds(
  generationConfig: Readonly<Record<string, unknown>> | null,
  tokenizerConfig: Readonly<Record<string, unknown>>,
  vocabSize: number,
  idOf: (token: string) => number | undefined,
  where: (file: string) => string = (f) => f,
): number[] {
  const value = generationConfig?.eos_token_id;
  if (value !== undefined && value !== null) {
    const ids = Array.isArray(value) ? value : [value];
    if (ids.length === 0 || ids.some((id) => !Number.isInteger(id) || id < 0 || id >= vocabSize)) {
      throw new ChatTemplateError(
        `${where(CHAT_FILES.generationConfig)}: eos_token_id is ${JSON.stringify(value)}; allowed: a token id or a non-empty list of token ids in [0, ${vocabSize})`,
      );
    }
    return [...new Set(ids as number[])];
  }
  const eos = tokenString(tokenizerConfig.eos_token);
  const id = eos === null ? undefined : idOf(eos);
  if (id === undefined) {
    const found = eos === null ? 'no eos_token' : `eos_token ${JSON.stringify(eos)}, which is not in the vocabulary`;
    throw new ChatTemplateError(
      `${where(CHAT_FILES.tokenizerConfig)} has ${found} and there is no ${where(CHAT_FILES.generationConfig)} eos_token_id; allowed: either names the stop token(s)`,
    );
  }
  return [id];
}

/**
 * Rollouts append each turn's prompt to the ids already sampled, so the template must render a
 * conversation as the render of its earlier turns followed by the new ones (Qwen2/2.5 templates do;
 * one that rewrites earlier assistant turns, e.g. dropping their reasoning, cannot be followed token
 * for token). Checked on a probe conversation, with and without a system message.
 * @throws ChatTemplateError naming the template when it fails to render or is not append-only
 */
export function checkAppendOnly(chat: ChatTemplate, templateFile: string): void {
  for (const system of [[], [{ role: 'system' as const, content: 'S' }]]) {
    const first = [...system, { role: 'user' as const, content: 'U1' }];
    const later = [...first, { role: 'assistant' as const, content: 'A1' }, { role: 'user' as const, content: 'U2' }];
    let before: string;
    let after: string;
    try {
      before = chat.render(first, true);
      after = chat.render(later, true);
    } catch (err) {
      throw new ChatTemplateError(
        `${templateFile}: the template fails on a ${system.length ? 'system/' : ''}user/assistant conversation (${(err as Error).message})`,
      );
    }
    if (!after.startsWith(`${before}A1`)) {
      throw new ChatTemplateError(
        `${templateFile}: the template renders earlier turns differently once a turn is added (${JSON.stringify(before)} + "A1" is not the start of ${JSON.stringify(after)}); ` +
          "allowed: a template whose render of a conversation begins with the render of its earlier turns and the assistant's reply as written (starpo's rollouts keep the sampled tokens)",
      );
    }
  }
}

/** The file names tokenizerFromFiles reads: tokenizer.json and the chat files. */
export const TOKENIZER_FILE_NAMES = [
  'tokenizer.json',
  CHAT_FILES.tokenizerConfig,
  CHAT_FILES.template,
  CHAT_FILES.generationConfig,
] as const;

/** The tokenizer files of a model folder that exist, by name (bytes as stored). */
export function readTokenizerFiles(dir: string): Record<string, Uint8Array> {
  const files: Record<string, Uint8Array> = {};
  for (const name of TOKENIZER_FILE_NAMES) if (existsSync(join(dir, name))) files[name] = readFileSync(join(dir, name));
  return files;
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

function parseJSONFile(files: Record<string, Uint8Array>, name: string, where: (file: string) => string): Record<string, unknown> | null {
  const bytes = files[name];
  if (!bytes) return null;
  let value: unknown;
  try {
    value = JSON.parse(text(bytes));
  } catch (err) {
    throw new ChatTemplateError(`${where(name)} is not valid JSON (${(err as Error).message})`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new ChatTemplateError(`${where(name)} is not a JSON object`);
  return value as Record<string, unknown>;
}

/**
 * The ChatTokenizer of a model folder's or checkpoint's files (by name): tokenizer.json (required);
 * for an HF tokenizer.json the chat template (chat_template.jinja, else tokenizer_config.json
 * chat_template), its special-token variables (tokenizer_config.json) and the stop ids
 * (generation_config.json eos_token_id, else tokenizer_config.json eos_token). starpo's char tokenizer
 * has the tiny preset's format (CHATML_TEMPLATE, its eos list) and ignores the other files.
 * @param where the path shown for a file name in errors (default: the name)
 * @throws Error naming the file and key: tokenizer.json missing or invalid, no chat template, a template
 *   the Jinja parser rejects or that renders earlier turns differently once a turn is added, bad eos ids
 */
export function tokenizerFromFiles(files: Record<string, Uint8Array>, where: (file: string) => string = (f) => f): ChatTokenizer {
  const tokFile = where('tokenizer.json');
  if (!files['tokenizer.json']) throw new ChatTemplateError(`${tokFile} does not exist`);
  let json: unknown;
  try {
    json = JSON.parse(text(files['tokenizer.json']));
  } catch (err) {
    throw new ChatTemplateError(`${tokFile} is not valid JSON (${(err as Error).message})`);
  }
  let base: Tokenizer;
  try {
    base = tokenizerFromJSON(json);
  } catch (err) {
    throw new ChatTemplateError(`${tokFile}: ${(err as Error).message.replace(/^tokenizer\.json: /, '')}`);
  }
  if (base instanceof CharTokenizer) return charChatTokenizer(base);
  const config = parseJSONFile(files, CHAT_FILES.tokenizerConfig, where) ?? {};
  const jinja = files[CHAT_FILES.template] ? text(files[CHAT_FILES.template] as Uint8Array) : null;
  const source = chatTemplateSource(config, jinja, where);
  const templateFile = where(jinja === null ? `${CHAT_FILES.tokenizerConfig} chat_template` : CHAT_FILES.template);
  let chat: ChatTemplate;
  try {
    chat = new ChatTemplate(source, namedSpecialTokens(config));
  } catch (err) {
    throw new ChatTemplateError(`${templateFile}: the Jinja template does not parse (${(err as Error).message})`);
  }
  checkAppendOnly(chat, templateFile);
  const vocab = new Map(Object.entries(base.specialTokens));
  const idOf = (token: string) => vocab.get(token) ?? singleId(base, token);
  const eosIds = stopTokenIds(parseJSONFile(files, CHAT_FILES.generationConfig, where), config, base.vocabSize, idOf, where);
  const chatFiles = Object.fromEntries(
    Object.values(CHAT_FILES)
      .filter((n) => files[n])
      .map((n) => [n, files[n] as Uint8Array]),
  );
  return withChat(base, chat, eosIds, chatFiles);
}

/** The id of a token string that encodes to exactly one id, else undefined. */
function singleId(tokenizer: Tokenizer, token: string): number | undefined {
  const ids = tokenizer.encode(token);
  return ids.length === 1 ? ids[0] : undefined;
}
