/**
 * The turns of an episode as the rollout renders them (manager.ts): the user message of each turn (the
 * tag's agent template filled) and the first prompt (env instruction + first user message, through the
 * model's chat template), the reply budget of a turn, and the rule that sequence_length must hold the
 * first prompt and one reply. Preflight checks sequence_length with the same code before a run starts.
 */
import type { CustomEnvConfig } from '../contract';
import type { ResetResult } from '../envs/env';
import { createEnv, createInProcessEnv } from '../envs/registry';
import type { ChatTokenizer } from '../model/tokenizer';
import { EpisodeChat, fillTemplate, firstUserMessage, formatSuffix, usesThinkPattern } from './chat';

/** The user message of a turn (`turn` = turns played so far): the tag's agent_template filled. */
export function userContent(cfg: CustomEnvConfig, enableThink: boolean, turn: number, observation: string): string {
  return fillTemplate(cfg.agent_template, {
    turn_idx: turn + 1,
    observation,
    actions_left: cfg.max_steps - turn,
    max_response_length: cfg.max_tokens_per_step,
    suffix: formatSuffix(enableThink),
  });
}

/** The first prompt of an episode from its env's reset: env instruction, then the first user message. */
export function firstPrompt(chat: EpisodeChat, cfg: CustomEnvConfig, enableThink: boolean, reset: ResetResult): string {
  return chat.prompt(firstUserMessage(reset.info.env_instruction, userContent(cfg, enableThink, 0, reset.observation)));
}

/** Tokens a reply may take in one turn: the tag's max_tokens_per_step, at most generating_args.max_new_tokens. */
export function replyBudget(cfg: CustomEnvConfig, maxNewTokens: number): number {
  return Math.min(cfg.max_tokens_per_step, maxNewTokens);
}

/**
 * Why sequence_length cannot hold a tag's first turn, or null when it can.
 * @param prompt tokens of the first prompt; @param reply the reply budget (replyBudget)
 */
export function firstTurnProblem(sequenceLength: number, tag: string, prompt: number, reply: number): string | null {
  if (sequenceLength - prompt >= reply) return null;
  return (
    `${sequenceLength} leaves no room for the first turn of tag ${tag}: its prompt is ${prompt} tokens ` +
    `and a reply may take ${reply}; allowed: >= ${prompt + reply} (a few turns more for multi-turn envs)`
  );
}

/** A valid answer as the env parses it (envs/env.ts parseAction): the action in answer tags, after an empty think block for a think-pattern tag. */
export function answerText(action: string, enableThink: boolean): string {
  return `${enableThink ? '<think></think>' : ''}<answer>${action}</answer>`;
}

/** Every valid answer of a tag (answerText of each action name) with its tokens; empty for free-form answers (no action names). */
export function validAnswers(tokenizer: ChatTokenizer, cfg: CustomEnvConfig): { action: string; text: string; tokens: number }[] {
  const enableThink = usesThinkPattern(cfg.env_config);
  const env = createEnv(cfg.env_type, cfg.env_config, { envId: 0, enableThink });
  return env.actionNames.map((action) => {
    const text = answerText(action, enableThink);
    return { action, text, tokens: tokenizer.encode(text).length };
  });
}

/**
 * Tokens of the first prompt of an episode of `cfg` reset with `seed`, rendered as playEpisodes renders it;
 * null for an env served by another process (its reset needs the server: the rollout checks its first turn).
 */
export function firstPromptTokens(tokenizer: ChatTokenizer, cfg: CustomEnvConfig, seed: number): number | null {
  const enableThink = usesThinkPattern(cfg.env_config);
  const env = createInProcessEnv(cfg.env_type, cfg.env_config, { envId: 0, enableThink });
  if (env === null) return null;
  const chat = new EpisodeChat(tokenizer, cfg.agent_system_template);
  return tokenizer.encode(firstPrompt(chat, cfg, enableThink, env.reset(seed))).length;
}
