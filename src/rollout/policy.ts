/**
 * What the rollout manager needs from a policy: batched continuation of token contexts.
 * The model-backed policy (model_policy.ts) samples from the Qwen2 decoder; the warm-up uses scripted
 * policies (scripted_policy.ts) that answer with random valid actions or the env solver's plan.
 */
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
}

/** A batched policy. May be async so long generations can yield to heartbeats. */
export interface Policy {
  generate(request: PolicyRequest): Promise<PolicyResponse>;
  /** Frees what the policy kept for the episodes of the batch that just ended (called once per batch). */
  endEpisodes?(): void;
}
