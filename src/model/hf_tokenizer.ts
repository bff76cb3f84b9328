/**
 * HF tokenizer.json files (the `tokenizers` library's format, https://huggingface.co/docs/tokenizers),
 * loaded with @huggingface/tokenizers (pure JS). Pad and eos ids follow the ChatML convention of
 * chatml.ts; a folder's generation_config.json stop ids replace the eos ids (tokenizer.ts). The char
 * tokenizer's export in this format is hf_char_tokenizer.ts.
 */
import { Tokenizer as HfLibTokenizer } from '@huggingface/tokenizers';
import { EOS_TOKENS, PAD_TOKEN, REQUIRED_TOKENS } from './chatml';
import type { Tokenizer } from './tokenizer';

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
      throw new Error(`tokenizer.json: token(s) ${missing.map((t) => JSON.stringify(t)).join(', ')} missing; starpo's ChatML prompts need ${REQUIRED_TOKENS.join(', ')}`);
    }
    this.padId = vocab.get(PAD_TOKEN) as number;
    this.eosIds = EOS_TOKENS.map((t) => vocab.get(t) as number);
  }

  encode(text: string): number[] {
    return this.lib.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: readonly number[], skipSpecial = false): string {
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
        throw new RangeError(`Tokenizer.decode: id ${id} is out of range [0, ${this.vocabSize})`);
      }
    }
    if (ids.length === 0) return ''; // the library refuses empty input
    return this.lib.decode([...ids], { skip_special_tokens: skipSpecial, clean_up_tokenization_spaces: false });
  }

  toJSON(): HfTokenizerJSON {
    return this.json;
  }
}

/**
 * A Tokenizer over a parsed HF tokenizer.json. vocabSize = largest id + 1 (model vocab and added tokens);
 * padId = `<|endoftext|>`, eosIds = [`<|im_end|>`, `<|endoftext|>`] (SPEC.md §4.3).
 * @throws Error when the library rejects the file (unsupported model type, malformed fields) or a ChatML
 *   token (`<|im_start|>`, `<|im_end|>`, `<|endoftext|>`) is missing.
 */
export function hfTokenizer(json: HfTokenizerJSON): Tokenizer {
  return new HfTokenizer(json);
}
