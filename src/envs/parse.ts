/**
 * Answer parsing (SPEC.md §4.4; ROLL roll/pipeline/agentic/env/parse_action_utils.py
 * default_parser_action_func). Steps: strip the ChatML special tokens, take the FIRST match of
 * `<answer>(.*?)</answer>` (or, with the think pattern, `<think>(.*?)</think>\s*<answer>(.*?)</answer>`),
 * trim it, and match it case-insensitively and exactly against the action names.
 * Dot matches newlines (like Python's re.DOTALL), so a multi-line <think> block parses.
 */

/** Special tokens removed before parsing (Qwen ChatML; SPEC.md §4.1, §4.3). */
export const SPECIAL_TOKENS: readonly string[] = ['<|im_end|>', '<|endoftext|>', '<|im_start|>'];

const ANSWER_RE = /<answer>([\s\S]*?)<\/answer>/;
const THINK_ANSWER_RE = /<think>([\s\S]*?)<\/think>\s*<answer>([\s\S]*?)<\/answer>/;

/** Result of `parseAction`. `action`: canonical action name or null (invalid). `answer`: the trimmed
 * text between the answer tags (undefined when no tags matched). `think`: trimmed think text (think
 * pattern only). */
export interface ParsedAction {
  action: string | null;
  answer?: string;
  think?: string;
}

/** Options of `parseAction`. `enableThink`: require the think pattern (default false). */
export interface ParseOptions {
  enableThink?: boolean;
}

/** Removes every occurrence of the special tokens (SPECIAL_TOKENS) from `text`. */
export function stripSpecialTokens(text: string): string {
  let out = text;
  for (const tok of SPECIAL_TOKENS) out = out.split(tok).join('');
  return out;
}

/**
 * Parses a raw model response into an action.
 * @param text raw response text (may contain special tokens and a <think> block)
 * @param actionNames canonical action names, e.g. ['Left', 'Down', 'Right', 'Up']
 * @returns `{ action }` with the canonical name (the first listed when names differ only by case),
 *          or `action: null` when no tags match or the answer is not an action name.
 */
export function parseAction(text: string, actionNames: readonly string[], opts: ParseOptions = {}): ParsedAction {
  const clean = stripSpecialTokens(text);
  let answer: string;
  let think: string | undefined;
  if (opts.enableThink) {
    const m = THINK_ANSWER_RE.exec(clean);
    if (!m) return { action: null };
    think = m[1].trim();
    answer = m[2].trim();
  } else {
    const m = ANSWER_RE.exec(clean);
    if (!m) return { action: null };
    answer = m[1].trim();
  }
  const lower = answer.toLowerCase();
  const action = actionNames.find((name) => name.toLowerCase() === lower) ?? null;
  return think === undefined ? { action, answer } : { action, answer, think };
}
