/**
 * A model's own chat template, rendered as transformers' `apply_chat_template` renders it: the Jinja
 * source from chat_template.jinja (transformers 5 saves it there) or tokenizer_config.json
 * `chat_template` (a string, or a list of {name, template} of which "default" is used), run by
 * @huggingface/jinja with the variables transformers passes: `messages`, `add_generation_prompt`,
 * `tools` and `documents` (None), and the named special tokens of tokenizer_config.json
 * (PreTrainedTokenizerBase.special_tokens_map: bos_token, eos_token, ... as strings, unset ones absent).
 * Source: transformers 5 tokenization_utils_base.py (from_pretrained, get_chat_template,
 * apply_chat_template) and utils/chat_template_utils.py (render_jinja_template).
 */
import { Template } from '@huggingface/jinja';

/** One chat message as a template sees it. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

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

/** A compiled chat template with the special-token variables it is rendered with. */
export class ChatTemplate {
  private readonly compiled: Template;

  /**
   * @param source the Jinja source
   * @param specialTokens the named special tokens (bos_token, eos_token, ...) passed to the template
   * @throws Error from the Jinja parser when the source is not a template it can read
   */
  constructor(readonly source: string, readonly specialTokens: Readonly<Record<string, string>>) {
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

/** A tokenizer_config.json token entry as a string: the string itself, or an AddedToken's `content`. */
function tokenString(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') return (value as { content: string }).content;
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
  tokenizerConfig: Readonly<Record<string, unknown>>, jinjaFile: string | null, where: (file: string) => string = (f) => f,
): string {
  if (jinjaFile !== null) return jinjaFile;
  const file = where(CHAT_FILES.tokenizerConfig);
  const allowed = `allowed: a Jinja string, or a list of {name, template} with one named "default"; or a ${where(CHAT_FILES.template)} file`;
  const value = tokenizerConfig.chat_template;
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) {
    throw new ChatTemplateError(`${file}: chat_template is missing (and there is no ${CHAT_FILES.template}); starpo renders prompts with the model's own chat template; ${allowed}`);
  }
  if (Array.isArray(value)) {
    const entry = value.find((t) => t && typeof t === 'object' && (t as { name?: unknown }).name === 'default') as { template?: unknown } | undefined;
    if (entry && typeof entry.template === 'string') return entry.template;
    const names = value.map((t) => (t && typeof t === 'object' ? (t as { name?: unknown }).name : t));
    throw new ChatTemplateError(`${file}: chat_template lists templates ${JSON.stringify(names)} but none named "default" with a string template; ${allowed}`);
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
  generationConfig: Readonly<Record<string, unknown>> | null, tokenizerConfig: Readonly<Record<string, unknown>>,
  vocabSize: number, idOf: (token: string) => number | undefined, where: (file: string) => string = (f) => f,
): number[] {
  const value = generationConfig?.eos_token_id;
  if (value !== undefined && value !== null) {
    const ids = Array.isArray(value) ? value : [value];
    if (ids.length === 0 || ids.some((id) => !Number.isInteger(id) || id < 0 || id >= vocabSize)) {
      throw new ChatTemplateError(`${where(CHAT_FILES.generationConfig)}: eos_token_id is ${JSON.stringify(value)}; allowed: a token id or a non-empty list of token ids in [0, ${vocabSize})`);
    }
    return [...new Set(ids as number[])];
  }
  const eos = tokenString(tokenizerConfig.eos_token);
  const id = eos === null ? undefined : idOf(eos);
  if (id === undefined) {
    const found = eos === null ? 'no eos_token' : `eos_token ${JSON.stringify(eos)}, which is not in the vocabulary`;
    throw new ChatTemplateError(`${where(CHAT_FILES.tokenizerConfig)} has ${found} and there is no ${where(CHAT_FILES.generationConfig)} eos_token_id; allowed: either names the stop token(s)`);
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
      throw new ChatTemplateError(`${templateFile}: the template fails on a ${system.length ? 'system/' : ''}user/assistant conversation (${(err as Error).message})`);
    }
    if (!after.startsWith(`${before}A1`)) {
      throw new ChatTemplateError(
        `${templateFile}: the template renders earlier turns differently once a turn is added (${JSON.stringify(before)} + "A1" is not the start of ${JSON.stringify(after)}); ` +
          "allowed: a template whose render of a conversation begins with the render of its earlier turns and the assistant's reply as written (starpo's rollouts keep the sampled tokens)",
      );
    }
  }
}
