/**
 * Chat formatting of the multi-turn rollout with the Qwen ChatML template (SPEC.md §4.1-4.2):
 * "<|im_start|>{role}\n{content}<|im_end|>\n", then "<|im_start|>assistant\n" to prompt a reply.
 * A response ends with its sampled stop token (<|im_end|>); the "\n" the template puts after it
 * opens the next turn's prompt, so the concatenation equals the template applied to the whole chat.
 */

/** Fields of agent_template (SPEC.md §4.1). */
export interface TemplateFields {
  /** 1-based turn number. */
  turn_idx: number;
  observation: string;
  /** Turns left including this one. */
  actions_left: number;
  /** Token budget of this reply. */
  max_response_length: number;
  suffix: string;
}

/**
 * Fills {field} placeholders; unknown placeholders stay as written.
 * Source: ROLL agent_template formatting (str.format with these field names).
 */
export function fillTemplate(template: string, fields: TemplateFields): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) =>
    name in fields ? String(fields[name as keyof TemplateFields]) : whole,
  );
}

/**
 * Prompt text of turn 0: optional system message, then the user message (env instruction + "\n" +
 * filled agent template), then the assistant header. The system message is left out when empty.
 */
export function firstTurnPrompt(systemTemplate: string, envInstruction: string, userContent: string): string {
  const system = systemTemplate ? `<|im_start|>system\n${systemTemplate}<|im_end|>\n` : '';
  const user = envInstruction ? `${envInstruction}\n${userContent}` : userContent;
  return `${system}<|im_start|>user\n${user}<|im_end|>\n<|im_start|>assistant\n`;
}

/**
 * Prompt text of a later turn. `closed` says whether the previous response ended with its stop
 * token; if not (it hit the token budget), the prompt closes the assistant message first.
 */
export function laterTurnPrompt(userContent: string, closed: boolean): string {
  return `${closed ? '' : '<|im_end|>'}\n<|im_start|>user\n${userContent}<|im_end|>\n<|im_start|>assistant\n`;
}
