/**
 * Chat formatting of the multi-turn rollout with the Qwen ChatML template (SPEC.md §4.1-4.2):
 * "<|im_start|>{role}\n{content}<|im_end|>\n", then "<|im_start|>assistant\n" to prompt a reply.
 * A response ends with its sampled stop token (<|im_end|>); the "\n" the template puts after it
 * opens the next turn's prompt, so the concatenation equals the template applied to the whole chat.
 */

/**
 * Whether a tag answers in the think-then-answer pattern: its env_config.action_pattern contains
 * `<think>`, as ROLL's think_action_pattern `<think>(.*?)</think>\s*<answer>(.*?)</answer>` does (ROLL
 * examples/config/traj_envs.yaml, tag FrozenLakeThink; ROLL's parser reads the two groups as think and
 * answer). Anything else, or no action_pattern, is the answer-only pattern (SPEC.md §4.4).
 */
export function usesThinkPattern(envConfig: Readonly<Record<string, unknown>>): boolean {
  const pattern = envConfig.action_pattern;
  return typeof pattern === 'string' && pattern.includes('<think>');
}

/**
 * The {suffix} of agent_template: the answer format the env parses. ROLL fills it from the env's
 * info["suffix"]; starpo's envs have none, so it is RAGEN's format prompt (ragen/llm_agent/ctx_manager.py
 * FORMAT_PROMPT) for the tag's pattern.
 */
export function formatSuffix(enableThink: boolean): string {
  const format = enableThink ? '<think> [Your thoughts] </think> <answer> [your answer] </answer>' : '<answer> [your answer] </answer>';
  return `Always output: ${format} with no extra text. Strictly follow this format.`;
}

/** Fields of agent_template (SPEC.md §4.1). */
export interface TemplateFields {
  /** 1-based turn number. */
  turn_idx: number;
  observation: string;
  /** Turns left including this one. */
  actions_left: number;
  /** custom_envs.<tag>.max_tokens_per_step (ROLL reports the per-tag cap, not the effective budget). */
  max_response_length: number;
  /** The answer format (formatSuffix). */
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
