/**
 * Chat formatting of the multi-turn rollout (docs/numerics.md §4.1-4.2): the agent template's fields, the answer
 * format, and the prompts of each turn rendered with the model's own chat template (EpisodeChat), so
 * prompt_0 + response_0 + ... + prompt_t tokenizes as apply_chat_template(messages up to turn t,
 * add_generation_prompt=True) with each reply as sampled.
 */
import type { ChatMessage, ChatTokenizer } from '../model/tokenizer';

/**
 * Whether a tag answers in the think-then-answer pattern: its env_config.action_pattern contains
 * `<think>`, as ROLL's think_action_pattern `<think>(.*?)</think>\s*<answer>(.*?)</answer>` does (ROLL
 * examples/config/traj_envs.yaml, tag FrozenLakeThink; ROLL's parser reads the two groups as think and
 * answer). Anything else, or no action_pattern, is the answer-only pattern (docs/numerics.md §4.4).
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

/** Fields of agent_template (docs/numerics.md §4.1). */
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
 * Fills {field} placeholders (config validation refuses any other: AGENT_TEMPLATE_FIELDS).
 * Source: ROLL agent_template formatting (str.format with these field names).
 */
export function fillTemplate(template: string, fields: TemplateFields): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in fields ? String(fields[name as keyof TemplateFields]) : whole));
}

/** The first user message: the env instruction, "\n", then the filled agent template (docs/numerics.md §4.1). */
export function firstUserMessage(envInstruction: string, userContent: string): string {
  return envInstruction ? `${envInstruction}\n${userContent}` : userContent;
}

/**
 * The prompts of one episode, rendered with the model's chat template turn by turn. Each prompt is the
 * text the template adds to the conversation so far: render(messages up to this user message,
 * add_generation_prompt) minus what the episode's ids already hold (earlier prompts, and each reply as
 * the template renders it: the decoded reply without its stop token). The reply's sampled stop token
 * stands for the template's end-of-turn token: when the text after a closed reply starts with a stop
 * token, that token is left out, so the turn is closed once (ROLL's doubled <|im_end|> is not copied); a
 * reply cut by its token budget gets the template's whole closing text.
 */
export class EpisodeChat {
  private readonly messages: ChatMessage[] = [];
  /** The rendered text the episode's ids stand for so far. */
  private rendered = '';
  /** The last reply ended with a stop token. */
  private closed = false;
  private readonly stopTexts: string[];

  /** @param system the system message (custom_envs.<tag>.agent_system_template); empty: none, the template's default applies */
  constructor(
    private readonly tokenizer: ChatTokenizer,
    system: string,
  ) {
    if (system) this.messages.push({ role: 'system', content: system });
    this.stopTexts = tokenizer.eosIds.map((id) => tokenizer.decode([id], false));
  }

  /**
   * The prompt text of the next turn, whose user message is `user`.
   * @throws Error when the template renders the earlier turns differently (not append-only)
   */
  prompt(user: string): string {
    this.messages.push({ role: 'user', content: user });
    const full = this.tokenizer.chat.render(this.messages, true);
    if (!full.startsWith(this.rendered)) {
      throw new Error(
        `chat template: the render of turn ${this.messages.filter((m) => m.role === 'user').length} does not begin with the turns before it; starpo's rollouts need an append-only template`,
      );
    }
    let added = full.slice(this.rendered.length);
    const stop = this.closed ? this.stopTexts.find((s) => added.startsWith(s)) : undefined;
    if (stop) added = added.slice(stop.length);
    this.rendered = full;
    return added;
  }

  /** Records a reply: its sampled ids (stop token included when sampled). */
  reply(tokens: readonly number[]): void {
    this.closed = tokens.length > 0 && this.tokenizer.eosIds.includes(tokens[tokens.length - 1] as number);
    const content = this.tokenizer.decode(this.closed ? tokens.slice(0, -1) : tokens, false);
    this.messages.push({ role: 'assistant', content });
    this.rendered += content;
  }
}
