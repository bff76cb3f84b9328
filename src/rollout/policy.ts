/**
 * What the rollout manager needs from a policy (batched continuation of token contexts), and the
 * policy backed by the Qwen2 decoder. The warm-up's scripted policies are in demonstrations.ts.
 */
import type { GeneratingArgs } from '../contract';
import { generate } from '../model/generate';
import { KvSession } from '../model/kv_session';
import { atShape } from '../model/out_of_memory';
import type { Qwen2 } from '../model/qwen2';
import type { ChatTokenizer } from '../model/tokenizer';
import type { Rng } from '../util/rng';

/** What a scripted policy may know about the env of a row (model policies ignore it). */
export interface RowEnv {
  /** Action names the env accepts. */
  actionNames: readonly string[];
  /** A shortest plan from the env's current state (Env.solve), when the env has a solver. */
  solve?: () => string[] | null;
  /** The tag answers `<think>...</think><answer>...</answer>` (chat.ts usesThinkPattern). */
  enableThink: boolean;
}

/** Input of one batched generation call. */
export interface PolicyRequest {
  /** One token-id context per active episode (the whole chat so far, ending with the assistant header). */
  contexts: number[][];
  /** Token budget per row (tokens, >= 1). */
  maxNewTokens: number[];
  /** One seeded stream per row, so a row's draws do not depend on the other rows. */
  rngs: Rng[];
  /** The env of each row (used only by scripted policies). */
  envs: readonly RowEnv[];
  /**
   * Per row, an id naming its episode that stays fixed across the turns of one batch of episodes, so a
   * policy may keep per-episode state (the model policy keeps KV caches) until `endEpisodes`.
   */
  rowIds?: number[];
}

/** Output: sampled tokens per row (stop token included when reached) and their log-probs (nats). */
export interface PolicyResponse {
  tokens: number[][];
  logprobs: number[][];
  /**
   * Per row, whether the reply is one to learn from (default: all are). A scripted policy's noise moves
   * are not: they are packed as context, with response mask 0, so the loss skips them.
   */
  learned?: boolean[];
}

/** A batched policy. May be async so long generations can yield to heartbeats. */
export interface Policy {
  generate(request: PolicyRequest): Promise<PolicyResponse>;
  /** Frees what the policy kept for the episodes of the batch that just ended (called once per batch). */
  endEpisodes?(): void;
}

/**
 * The model policy: batched KV-cache generation with generating_args (temperature, top_p, top_k,
 * do_sample) from each row's seeded stream (docs/numerics.md §4.3). Requests with rowIds reuse each episode's
 * KV cache from its previous turn (kv_session.ts) until endEpisodes. Generation stops at the
 * tokenizer's eos ids, its model's stop tokens (kept in the response).
 */
export function modelPolicy(model: Qwen2, tokenizer: ChatTokenizer, args: GeneratingArgs): Policy {
  const session = new KvSession();
  return {
    async generate(request: PolicyRequest): Promise<PolicyResponse> {
      // The longest row once generated: its context and its new tokens.
      const shape = {
        kind: 'generation batch' as const,
        rows: request.contexts.length,
        tokens: Math.max(...request.contexts.map((c, i) => c.length + request.maxNewTokens[i])),
      };
      return atShape(shape, () =>
        generate(model, request.contexts, {
          maxNewTokens: request.maxNewTokens,
          temperature: args.temperature,
          topP: args.top_p,
          topK: args.top_k,
          doSample: args.do_sample,
          stopIds: [...tokenizer.eosIds],
          rngs: request.rngs,
          session,
          rowIds: request.rowIds,
        }),
      );
    },
    endEpisodes(): void {
      session.clear();
    },
  };
}
