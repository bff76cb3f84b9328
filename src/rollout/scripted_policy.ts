/**
 * A policy that answers "<answer>{action}</answer><|im_end|>" with a uniformly random valid action
 * drawn from each row's seeded stream. It produces the format warm-up episodes (issue 2, item 5):
 * the answer format, no skill. Log-probs are reported as 0 (the episodes are demonstrations).
 */
import type { Tokenizer } from '../model/tokenizer';
import type { Policy, PolicyRequest, PolicyResponse } from './policy';

/** Builds the random-valid-action policy for a tokenizer with the ChatML `<|im_end|>` token. */
export function randomActionPolicy(tokenizer: Tokenizer): Policy {
  return {
    async generate(request: PolicyRequest): Promise<PolicyResponse> {
      const tokens = request.contexts.map((_, i) => {
        const names = request.actionNames[i];
        const action = names[request.rngs[i].int(names.length)];
        return tokenizer.encode(`<answer>${action}</answer><|im_end|>`).slice(0, request.maxNewTokens[i]);
      });
      return { tokens, logprobs: tokens.map((t) => t.map(() => 0)) };
    },
  };
}
