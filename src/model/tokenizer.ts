/**
 * Tokenizers (DESIGN.md, "Models"). The `tiny` preset uses a character tokenizer carrying the Qwen
 * ChatML special tokens, so prompts rendered with the Qwen chat template (SPEC.md §4:
 * "<|im_start|>{role}\n{content}<|im_end|>\n") tokenize with the same special ids layout as an HF model.
 * HF tokenizer.json files (`pretrain: DIR`, exported models) load through hf_tokenizer.ts.
 */
import { CHATML_SPECIAL_TOKENS, EOS_TOKENS, PAD_TOKEN } from './chatml';
import { hfTokenizer, isHfTokenizerJSON } from './hf_tokenizer';

/** A text <-> token id mapping. Ids are integers in [0, vocabSize). */
export interface Tokenizer {
  /** Number of ids (the model's vocab_size must be >= this). */
  readonly vocabSize: number;
  /** Padding id (`<|endoftext|>` for Qwen). */
  readonly padId: number;
  /** Ids that end a response (SPEC.md §4.3: `<|im_end|>`, `<|endoftext|>`). */
  readonly eosIds: readonly number[];
  /** Special token string -> id. */
  readonly specialTokens: Record<string, number>;
  /** Text -> ids; special-token strings in the text map to their single id. */
  encode(text: string): number[];
  /** Ids -> text; when skipSpecial is true, special tokens are dropped. Throws RangeError on an id out of range. */
  decode(ids: readonly number[], skipSpecial?: boolean): string;
  /** A JSON-serializable description; `tokenizerFromJSON(tok.toJSON())` rebuilds it (tokenizer.json in checkpoints). */
  toJSON(): unknown;
}

/** Serialized form of a CharTokenizer (`type: 'starpo-char'`). */
export interface CharTokenizerJSON {
  type: 'starpo-char';
  version: 1;
  /** Special tokens in id order starting at 0. */
  special: string[];
  /** Ordinary characters in id order after the special tokens. */
  chars: string[];
  unk: string;
  pad: string;
  eos: string[];
}

function defaultChars(): string[] {
  const chars = ['\n'];
  for (let c = 0x20; c <= 0x7e; c++) chars.push(String.fromCharCode(c));
  chars.push('√'); // FrozenLake renders the goal/agent with it.
  return chars;
}

class CharTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly padId: number;
  readonly eosIds: readonly number[];
  readonly specialTokens: Record<string, number>;
  private readonly unkId: number;
  private readonly idToStr: string[];
  private readonly charToId = new Map<string, number>();
  private readonly specialRe: RegExp;

  constructor(private readonly spec: CharTokenizerJSON) {
    this.idToStr = [...spec.special, ...spec.chars];
    this.vocabSize = this.idToStr.length;
    this.specialTokens = {};
    spec.special.forEach((s, i) => (this.specialTokens[s] = i));
    spec.chars.forEach((c, i) => {
      if ([...c].length !== 1) throw new Error(`charTokenizer: chars[${i}] = ${JSON.stringify(c)} is not a single character`);
      if (this.charToId.has(c)) throw new Error(`charTokenizer: chars[${i}] = ${JSON.stringify(c)} is duplicated`);
      this.charToId.set(c, spec.special.length + i);
    });
    const need = (name: string, s: string): number => {
      const id = this.specialTokens[s];
      if (id === undefined) throw new Error(`charTokenizer: ${name} = ${JSON.stringify(s)} is not one of the special tokens ${JSON.stringify(spec.special)}`);
      return id;
    };
    this.unkId = need('unk', spec.unk);
    this.padId = need('pad', spec.pad);
    this.eosIds = spec.eos.map((s) => need('eos', s));
    const esc = [...spec.special].sort((a, b) => b.length - a.length).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    this.specialRe = new RegExp(esc.join('|'), 'g');
  }

  encode(text: string): number[] {
    const out: number[] = [];
    const pushChars = (s: string): void => {
      for (const ch of s) out.push(this.charToId.get(ch) ?? this.unkId);
    };
    let last = 0;
    this.specialRe.lastIndex = 0;
    for (let m = this.specialRe.exec(text); m !== null; m = this.specialRe.exec(text)) {
      pushChars(text.slice(last, m.index));
      out.push(this.specialTokens[m[0]]);
      last = m.index + m[0].length;
    }
    pushChars(text.slice(last));
    return out;
  }

  decode(ids: readonly number[], skipSpecial = false): string {
    const nSpecial = this.spec.special.length;
    let s = '';
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
        throw new RangeError(`Tokenizer.decode: id ${id} is out of range [0, ${this.vocabSize})`);
      }
      if (skipSpecial && id < nSpecial) continue;
      s += this.idToStr[id];
    }
    return s;
  }

  toJSON(): CharTokenizerJSON {
    return { ...this.spec, special: [...this.spec.special], chars: [...this.spec.chars], eos: [...this.spec.eos] };
  }
}

/**
 * The character tokenizer of the `tiny` preset: ids 0..3 = `<|endoftext|>` (pad), `<|im_start|>`,
 * `<|im_end|>`, `<unk>`; then '\n', printable ASCII ' '..'~', and '√' (101 ids). Unknown characters map
 * to `<unk>`. eosIds = [`<|im_end|>`, `<|endoftext|>`] (SPEC.md §4.3).
 */
export function charTokenizer(): Tokenizer {
  return new CharTokenizer({
    type: 'starpo-char',
    version: 1,
    special: [...CHATML_SPECIAL_TOKENS],
    chars: defaultChars(),
    unk: '<unk>',
    pad: PAD_TOKEN,
    eos: [...EOS_TOKENS],
  });
}

/**
 * Rebuilds a tokenizer from a parsed tokenizer.json: starpo's char tokenizer (`toJSON()` output, type
 * 'starpo-char') or an HF tokenizer.json (an object with `model` and `added_tokens`, hf_tokenizer.ts).
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
