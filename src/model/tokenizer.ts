/**
 * Tokenizers and chat formats (docs/prompts.md): the Tokenizer and ChatTokenizer interfaces, a chat
 * template rendered as transformers renders it, the Qwen ChatML conventions, and the `tiny` preset's
 * character tokenizer with its own ChatML template (no default system prompt). HF folders' tokenizer files
 * (tokenizer.json, tokenizer_config.json, chat_template.jinja, generation_config.json) are read in hf/tokenizer.ts.
 */
import { Template } from '@huggingface/jinja';

/** ChatML special tokens in the char tokenizer's id order (0: pad, 1, 2, 3: unknown character). */
export const CHATML_SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<unk>'] as const;

/** Padding token of Qwen models (HF tokenizer_config pad_token). */
export const PAD_TOKEN = '<|endoftext|>';

/** Tokens that end a response of the tiny preset, in order (docs/numerics.md §4.3). */
export const EOS_TOKENS = ['<|im_end|>', '<|endoftext|>'] as const;

/** Tokens a tokenizer must have for starpo's prompts: the ChatML markers and the pad token. */
export const REQUIRED_TOKENS = ['<|im_start|>', '<|im_end|>', '<|endoftext|>'] as const;

/**
 * The tiny preset's Jinja chat template: ChatML ("<|im_start|>{role}\n{content}<|im_end|>\n" per message,
 * "<|im_start|>assistant\n" to prompt a reply) without a default system message (Qwen2.5's adds one).
 */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** One chat message as a template sees it. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/**
 * A compiled chat template with the special-token variables it is rendered with, run by @huggingface/jinja with
 * the variables transformers' `apply_chat_template` passes (transformers 5 utils/chat_template_utils.py
 * render_jinja_template): `messages`, `add_generation_prompt`, `tools` and `documents` (None), and the named
 * special tokens (bos_token, eos_token, ... as strings, unset ones absent).
 */
export class ChatTemplate {
  private readonly compiled: Template;

  /**
   * @param source the Jinja source
   * @param specialTokens the named special tokens (bos_token, eos_token, ...) passed to the template
   * @throws Error from the Jinja parser when the source is not a template it can read
   */
  constructor(
    readonly source: string,
    readonly specialTokens: Readonly<Record<string, string>>,
  ) {
    this.compiled = new Template(source);
  }

  /**
   * The text of `messages` (apply_chat_template(messages, tokenize=False, add_generation_prompt=...)).
   * @throws Error when the template raises (raise_exception) or fails on these messages
   */
  render(messages: readonly ChatMessage[], addGenerationPrompt: boolean): string {
    return this.compiled.render({
      ...this.specialTokens,
      messages: messages.map((m) => ({ ...m })),
      tools: null,
      documents: null,
      add_generation_prompt: addGenerationPrompt,
    });
  }
}

/** A text <-> token id mapping. Ids are integers in [0, vocabSize). */
export interface Tokenizer {
  /** Number of ids (the model's vocab_size must be >= this). */
  readonly vocabSize: number;
  /** Padding id (`<|endoftext|>` for Qwen). */
  readonly padId: number;
  /**
   * Ids that end a response. A ChatTokenizer's are its model's stop ids (generation_config.json); a bare
   * tokenizer.json knows none, and has the ChatML ones (docs/numerics.md §4.3: `<|im_end|>`, `<|endoftext|>`).
   */
  readonly eosIds: readonly number[];
  /** Special token string -> id. */
  readonly specialTokens: Record<string, number>;
  /** Text -> ids; special-token strings in the text map to their single id. */
  encode(text: string): number[];
  /** Ids -> text; when skipSpecial is true, special tokens are dropped. Throws RangeError on an id it cannot decode. */
  decode(ids: readonly number[], skipSpecial?: boolean): string;
  /** A JSON-serializable description; hf/tokenizer.ts `tokenizerFromJSON(tok.toJSON())` rebuilds it (tokenizer.json in checkpoints). */
  toJSON(): unknown;
}

/**
 * A tokenizer with the chat format of its model: what rollouts, checkpoints and exports use.
 * `eosIds` are the ids that end a response (generation_config.json eos_token_id, else the tokenizer's eos).
 */
export interface ChatTokenizer extends Tokenizer {
  /** The model's chat template (the folder's own; CHATML_TEMPLATE for the char tokenizer). */
  readonly chat: ChatTemplate;
  /**
   * The folder's files that define the chat format (tokenizer_config.json, chat_template.jinja,
   * generation_config.json; those present, bytes as read); empty for the char tokenizer. Checkpoints
   * store them beside tokenizer.json so tokenizerFromFiles rebuilds the same ChatTokenizer.
   */
  readonly chatFiles: Readonly<Record<string, Uint8Array>>;
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

/** The character tokenizer (see charTokenizer); hf/tokenizer.ts rebuilds one from its toJSON(). */
export class CharTokenizer implements Tokenizer {
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
      if (id === undefined)
        throw new Error(`charTokenizer: ${name} = ${JSON.stringify(s)} is not one of the special tokens ${JSON.stringify(spec.special)}`);
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
 * to `<unk>`. eosIds = [`<|im_end|>`, `<|endoftext|>`] (docs/numerics.md §4.3).
 */
export function charTokenizer(): ChatTokenizer {
  return charChatTokenizer(
    new CharTokenizer({
      type: 'starpo-char',
      version: 1,
      special: [...CHATML_SPECIAL_TOKENS],
      chars: defaultChars(),
      unk: '<unk>',
      pad: PAD_TOKEN,
      eos: [...EOS_TOKENS],
    }),
  );
}

/** `base` with a chat format: its text methods, `eosIds` replaced by the stop ids. */
export function withChat(
  base: Tokenizer,
  chat: ChatTemplate,
  eosIds: readonly number[],
  chatFiles: Record<string, Uint8Array>,
): ChatTokenizer {
  return {
    vocabSize: base.vocabSize,
    padId: base.padId,
    specialTokens: base.specialTokens,
    eosIds,
    chat,
    chatFiles,
    encode: (text) => base.encode(text),
    decode: (ids, skipSpecial) => base.decode(ids, skipSpecial),
    toJSON: () => base.toJSON(),
  };
}

/** A char tokenizer with the tiny preset's chat format: CHATML_TEMPLATE and its own eos tokens. */
export function charChatTokenizer(base: CharTokenizer): ChatTokenizer {
  const named = { eos_token: EOS_TOKENS[0], pad_token: PAD_TOKEN, unk_token: '<unk>' };
  return withChat(base, new ChatTemplate(CHATML_TEMPLATE, named), base.eosIds, {});
}
