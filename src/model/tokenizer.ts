/**
 * Tokenizers (DESIGN.md, "Models"). The `tiny` preset uses a character tokenizer carrying the Qwen
 * ChatML special tokens and its own ChatML chat template (chatml.ts CHATML_TEMPLATE, no default system
 * prompt). HF tokenizer.json files (`pretrain: DIR`, exported models) load through hf_tokenizer.ts; with
 * the folder's tokenizer_config.json / chat_template.jinja / generation_config.json they make a
 * ChatTokenizer: prompts rendered with the folder's own chat template, stop ids from its generation config.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHATML_SPECIAL_TOKENS, CHATML_TEMPLATE, EOS_TOKENS, PAD_TOKEN } from './chatml';
import { CHAT_FILES, ChatTemplate, ChatTemplateError, chatTemplateSource, checkAppendOnly, namedSpecialTokens, stopTokenIds } from './chat_template';
import { hfTokenizer, isHfTokenizerJSON } from './hf_tokenizer';

/** A text <-> token id mapping. Ids are integers in [0, vocabSize). */
export interface Tokenizer {
  /** Number of ids (the model's vocab_size must be >= this). */
  readonly vocabSize: number;
  /** Padding id (`<|endoftext|>` for Qwen). */
  readonly padId: number;
  /**
   * Ids that end a response. A ChatTokenizer's are its model's stop ids (generation_config.json); a bare
   * tokenizer.json knows none, and has the ChatML ones (SPEC.md §4.3: `<|im_end|>`, `<|endoftext|>`).
   */
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
export function charTokenizer(): ChatTokenizer {
  return charChatTokenizer(new CharTokenizer({
    type: 'starpo-char',
    version: 1,
    special: [...CHATML_SPECIAL_TOKENS],
    chars: defaultChars(),
    unk: '<unk>',
    pad: PAD_TOKEN,
    eos: [...EOS_TOKENS],
  }));
}

/** `base` with a chat format: its text methods, `eosIds` replaced by the stop ids. */
function withChat(base: Tokenizer, chat: ChatTemplate, eosIds: readonly number[], chatFiles: Record<string, Uint8Array>): ChatTokenizer {
  return {
    vocabSize: base.vocabSize, padId: base.padId, specialTokens: base.specialTokens, eosIds, chat, chatFiles,
    encode: (text) => base.encode(text),
    decode: (ids, skipSpecial) => base.decode(ids, skipSpecial),
    toJSON: () => base.toJSON(),
  };
}

/** A char tokenizer with the tiny preset's chat format: CHATML_TEMPLATE and its own eos tokens. */
function charChatTokenizer(base: CharTokenizer): ChatTokenizer {
  const named = { eos_token: EOS_TOKENS[0], pad_token: PAD_TOKEN, unk_token: '<unk>' };
  return withChat(base, new ChatTemplate(CHATML_TEMPLATE, named), base.eosIds, {});
}

/** The file names tokenizerFromFiles reads: tokenizer.json and the chat files. */
export const TOKENIZER_FILE_NAMES = ['tokenizer.json', CHAT_FILES.tokenizerConfig, CHAT_FILES.template, CHAT_FILES.generationConfig] as const;

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
  const chatFiles = Object.fromEntries(Object.values(CHAT_FILES).filter((n) => files[n]).map((n) => [n, files[n] as Uint8Array]));
  return withChat(base, chat, eosIds, chatFiles);
}

/** The id of a token string that encodes to exactly one id, else undefined. */
function singleId(tokenizer: Tokenizer, token: string): number | undefined {
  const ids = tokenizer.encode(token);
  return ids.length === 1 ? ids[0] : undefined;
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
