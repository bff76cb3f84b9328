/**
 * An HF tokenizer.json and tokenizer_config.json from a GGUF file's tokenizer metadata, built as transformers'
 * GGUF loader builds them (integrations/gguf/gguf_tokenizer_mapping.py): a byte-level BPE vocabulary
 * (`tokenizer.ggml.model` "gpt2") with GPT-2's pre-tokenizer, the file's merges, its control tokens as special
 * added tokens and its user-defined tokens as plain ones, and the chat template and named special tokens.
 */

import { GgufError } from '../gguf/error';
import type { GgufFile } from '../gguf/reader';
import type { HfAddedToken, HfTokenizerJSON } from './tokenizer';

/** llama.cpp's token types (llama_token_type): the two that become added tokens. */
const CONTROL = 3;
const USER_DEFINED = 4;

/**
 * Pre-tokenizer names for which transformers splits with a regex of their own before the byte-level step
 * (GGUF_PRE_TOKENIZER_SPLITS); those are not built here. Any other name gets GPT-2's split, as there.
 */
const OWN_SPLIT_PRE_TOKENIZERS = new Set([
  'llama3',
  'llama-v3',
  'llama-bpe',
  'falcon3',
  'falcon-h1',
  'pixtral',
  'midm-2.0',
  'lfm2',
  'jina-v5-nano',
  'dbrx',
  'smaug-bpe',
  'tekken',
  'qwen2',
  'deepseek-r1-qwen',
  'kormo',
  'f2llmv2',
  'megrez',
  'qwen35',
  'gpt-4o',
  'llama4',
  'kanana2',
  'talkie',
  'minimax-m2',
]);

/** A metadata value of the file, checked to be of the kind the caller needs. @throws GgufError naming the key */
export function ggufValue<T>(g: GgufFile, key: string, kind: 'string' | 'number' | 'boolean' | 'strings' | 'numbers'): T | undefined {
  const entry = g.metadata.get(key);
  if (entry === undefined) return undefined;
  const v = entry.value;
  const ok =
    kind === 'strings'
      ? Array.isArray(v) && v.every((x) => typeof x === 'string')
      : kind === 'numbers'
        ? Array.isArray(v) && v.every((x) => typeof x === 'number')
        : typeof v === kind;
  if (!ok)
    throw new GgufError(`${g.path}: metadata ${key} is a ${entry.type}${entry.itemType ? ` of ${entry.itemType}` : ''}; allowed: ${kind}`);
  return v as T;
}

/** GPT-2's bytes_to_unicode: printable bytes stand for themselves, the rest for code points from 256 on. */
function byteAlphabet(): string[] {
  const printable = (b: number) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const out: string[] = [];
  let next = 256;
  for (let b = 0; b < 256; b++) out.push(String.fromCodePoint(printable(b) ? b : next++));
  return out;
}

const BYTE_ALPHABET = byteAlphabet();
const BYTE_ALPHABET_SET = new Set(BYTE_ALPHABET);
const inByteAlphabet = (token: string) => [...token].every((ch) => BYTE_ALPHABET_SET.has(ch));

/** The file's token strings: spelled in the byte alphabet when they are, else respelled from their UTF-8 bytes (as transformers does). */
function byteLevelTokens(tokens: string[]): string[] {
  return tokens.map((t) => (inByteAlphabet(t) ? t : Array.from(new TextEncoder().encode(t), (b) => BYTE_ALPHABET[b]).join('')));
}

/** The tokenizer metadata every conversion needs. @throws GgufError naming the key that is missing or of another kind */
function tokenizerMetadata(g: GgufFile): { tokens: string[]; types: number[]; merges: string[] } {
  const model = ggufValue<string>(g, 'tokenizer.ggml.model', 'string');
  if (model !== 'gpt2') {
    throw new GgufError(
      `${g.path}: tokenizer.ggml.model = ${JSON.stringify(model ?? null)} is not supported; allowed: "gpt2" (byte-level BPE; sentencepiece vocabularies are not converted)`,
    );
  }
  const pre = ggufValue<string>(g, 'tokenizer.ggml.pre', 'string');
  if (pre !== undefined && OWN_SPLIT_PRE_TOKENIZERS.has(pre)) {
    throw new GgufError(
      `${g.path}: tokenizer.ggml.pre = ${JSON.stringify(pre)} splits text with a regex of its own, which is not implemented; allowed: a vocabulary that uses GPT-2's split (e.g. "smollm", "default")`,
    );
  }
  const tokens = ggufValue<string[]>(g, 'tokenizer.ggml.tokens', 'strings');
  const merges = ggufValue<string[]>(g, 'tokenizer.ggml.merges', 'strings');
  if (!tokens || !merges) {
    throw new GgufError(
      `${g.path}: tokenizer.ggml.${tokens ? 'merges' : 'tokens'} is missing; allowed: a byte-level BPE vocabulary with its merges`,
    );
  }
  const types = ggufValue<number[]>(g, 'tokenizer.ggml.token_type', 'numbers') ?? [];
  return { tokens, types, merges };
}

const addedToken = (id: number, content: string, special: boolean): HfAddedToken => ({
  id,
  content,
  single_word: false,
  lstrip: false,
  rstrip: false,
  normalized: false,
  special,
});

/**
 * tokenizer.json of the file's vocabulary, as transformers' GPT2Tokenizer serialises the one it builds.
 * @throws GgufError for a vocabulary that is not byte-level BPE with GPT-2's split, or missing tokens or merges
 */
export function ggufTokenizerJSON(g: GgufFile): HfTokenizerJSON {
  const { tokens, types, merges } = tokenizerMetadata(g);
  const spelled = byteLevelTokens(tokens);
  const vocab: Record<string, number> = {};
  spelled.forEach((t, id) => {
    vocab[t] = id;
  });
  // A control token outside the byte alphabet is a llama.cpp mislabel that transformers skips.
  const added = tokens.flatMap((t, id) =>
    types[id] === CONTROL && inByteAlphabet(t)
      ? [addedToken(id, t, true)]
      : types[id] === USER_DEFINED && vocab[t] !== undefined
        ? [addedToken(id, t, false)]
        : [],
  );
  const byteLevel = { add_prefix_space: false, trim_offsets: true, use_regex: true };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', ...byteLevel },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: {},
    },
    decoder: { type: 'ByteLevel', ...byteLevel, add_prefix_space: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: merges.map((m) => m.split(' ')),
    },
  };
}

/** The ids of the file's named special tokens (tokenizer.ggml.*_token_id), as transformers reads them. */
export function ggufSpecialIds(g: GgufFile): { bos?: number; eos?: number; unk?: number; pad?: number } {
  const id = (key: string) => ggufValue<number>(g, `tokenizer.ggml.${key}`, 'number');
  return { bos: id('bos_token_id'), eos: id('eos_token_id'), unk: id('unknown_token_id'), pad: id('padding_token_id') };
}

/**
 * tokenizer_config.json: the chat template, the named special tokens and whether a BOS is added, with
 * GPT2Tokenizer as the class (what SmolLM2's own folder names), so transformers loads tokenizer.json as written.
 * @throws GgufError when the file has no chat template (starpo renders prompts with the model's own)
 */
export function ggufTokenizerConfig(g: GgufFile, modelMaxLength: number): Record<string, unknown> {
  const { tokens } = tokenizerMetadata(g);
  const template = ggufValue<string>(g, 'tokenizer.chat_template', 'string');
  if (template === undefined) {
    throw new GgufError(`${g.path}: tokenizer.chat_template is missing; starpo renders prompts with the model's own chat template`);
  }
  const ids = ggufSpecialIds(g);
  const name = (id: number | undefined) => (id === undefined ? null : (tokens[id] ?? null));
  return {
    add_bos_token: ggufValue<boolean>(g, 'tokenizer.ggml.add_bos_token', 'boolean') ?? false,
    add_eos_token: ggufValue<boolean>(g, 'tokenizer.ggml.add_eos_token', 'boolean') ?? false,
    bos_token: name(ids.bos),
    eos_token: name(ids.eos),
    unk_token: name(ids.unk),
    pad_token: name(ids.pad),
    chat_template: template,
    clean_up_tokenization_spaces: false,
    model_max_length: modelMaxLength,
    tokenizer_class: 'GPT2Tokenizer',
  };
}
