/**
 * chat_fixtures.py's 3-turn FrozenLake episode played through the real rollout manager with scripted replies,
 * for the tests that check every turn's context against apply_chat_template (Qwen2.5, SmolLM2).
 */
import { customEnvSchema } from '../../src/contract';
import type { ChatTokenizer } from '../../src/model/tokenizer';
import { runEpisodes } from '../../src/rollout/manager';
import type { Policy } from '../../src/rollout/policy';

/** The episode's settings as the fixture records them. */
export interface FixtureEpisode {
  seed: number;
  env_config: Record<string, unknown>;
  agent_template: string;
  max_steps: number;
  max_tokens_per_step: number;
}

/** One fixture episode: per turn, the user message, the context ids transformers rendered and the reply. */
export interface FixtureEpisodeTurns {
  system: string;
  turns: Array<{ user: string; context_ids: number[]; response: string; response_ids: number[] }>;
}

/**
 * Answers turn t of every row with `replies[t]` and records each row's context. With `cut`, the reply
 * of that turn loses its stop token, as a reply that ran out of its token budget has none.
 */
export function scriptedReplies(replies: number[][], contexts: number[][], cut = -1): Policy {
  let turn = 0;
  return {
    async generate(req) {
      contexts.push(...req.contexts);
      const reply = turn === cut ? (replies[turn] as number[]).slice(0, -1) : (replies[turn] as number[]);
      turn++;
      return { tokens: req.contexts.map(() => reply), logprobs: req.contexts.map(() => reply.map(() => -1)) };
    },
  };
}

export async function playLake(tokenizer: ChatTokenizer, episode: FixtureEpisode, system: string, policy: Policy) {
  const customEnvs = {
    FrozenLake: customEnvSchema.parse({
      env_type: 'frozen_lake',
      agent_system_template: system,
      agent_template: episode.agent_template,
      max_steps: 3,
      max_tokens_per_step: episode.max_tokens_per_step,
      env_config: episode.env_config,
    }),
  };
  const spec = {
    tag: 'FrozenLake',
    groupId: 0,
    envId: 0,
    seed: episode.seed,
    trajGroupId: `FrozenLake_0_0_${episode.seed}`,
    rngParts: [1],
  };
  const [trajectory] = await runEpisodes([spec], {
    policy,
    tokenizer,
    customEnvs,
    sequenceLength: 4096,
    maxNewTokens: 64,
    split: 'train',
    step: 0,
  });
  return trajectory!;
}
