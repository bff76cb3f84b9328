/**
 * What the rollout manager needs from a policy: batched continuation of token contexts.
 * The model-backed policy (model_policy.ts) samples from the Qwen2 decoder; the warm-up uses a
 * scripted policy (scripted_policy.ts) that answers with uniformly random valid actions.
 */
import type { Rng } from '../util/rng';

/** Input of one batched generation call. */
export interface PolicyRequest {
  /** One token-id context per active episode (the whole chat so far, ending with the assistant header). */
  contexts: number[][];
  /** Token budget per row (tokens, >= 1). */
  maxNewTokens: number[];
  /** One seeded stream per row, so a row's draws do not depend on the other rows. */
  rngs: Rng[];
  /** Action names the env of each row accepts (used only by scripted policies). */
  actionNames: ReadonlyArray<readonly string[]>;
}

/** Output: sampled tokens per row (stop token included when reached) and their log-probs (nats). */
export interface PolicyResponse {
  tokens: number[][];
  logprobs: number[][];
}

/** A batched policy. May be async so long generations can yield to heartbeats. */
export interface Policy {
  generate(request: PolicyRequest): Promise<PolicyResponse>;
}
