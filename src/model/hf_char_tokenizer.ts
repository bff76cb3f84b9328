/**
 * starpo's char tokenizer (the `tiny` preset) as an HF tokenizer.json that transformers 4 and 5 both
 * encode with starpo's ids. transformers 5's AutoTokenizer gives every `model_type: qwen2` folder its
 * Qwen2Tokenizer, which keeps only the vocab and merges of tokenizer.json and rebuilds Qwen2's own
 * pipeline around them (NFC, Qwen2's split regex, byte-level pre-tokenizer and decoder, no unknown
 * token): a plain character vocabulary then loses spaces, newlines and '√'. So every character is an
 * added token, matched on the raw text before that pipeline runs, with the same id as in the vocab, and
 * the file states Qwen2's pipeline itself, so transformers 4 (which runs the file as written), 5 and
 * starpo's own reader (`pretrain: DIR`) agree. The byte-level decoder passes added tokens through.
 * Characters outside the alphabet reach the byte-level BPE, find no entry and are dropped (starpo's
 * char tokenizer maps them to `<unk>`); transformers 5 cannot be told otherwise.
 */
import type { CharTokenizerJSON } from './tokenizer';
import type { HfAddedToken, HfTokenizerJSON } from './hf_tokenizer';

/** transformers' models/qwen2/tokenization_qwen2.py PRETOKENIZE_REGEX (as in Qwen2.5's tokenizer.json). */
const QWEN2_SPLIT_REGEX = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const BYTE_LEVEL = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };

/** Every token of the char tokenizer in id order: the special tokens, then the characters. */
export function charTokens(spec: CharTokenizerJSON): HfAddedToken[] {
  return [...spec.special, ...spec.chars].map((content, id) => ({
    id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: id < spec.special.length,
  }));
}

/** The HF tokenizer.json of a char tokenizer (see the file comment). */
export function charTokenizerHfJSON(spec: CharTokenizerJSON): HfTokenizerJSON {
  const tokens = charTokens(spec);
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: tokens,
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: QWEN2_SPLIT_REGEX }, behavior: 'Isolated', invert: false }, BYTE_LEVEL] },
    post_processor: null,
    decoder: BYTE_LEVEL,
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false,
      vocab: Object.fromEntries(tokens.map((t) => [t.content, t.id])), merges: [],
    },
  };
}
