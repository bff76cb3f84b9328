/**
 * The policy backed by the Qwen2 decoder: batched KV-cache generation with generating_args
 * (temperature, top_p, top_k, do_sample) from each row's seeded stream (SPEC.md §4.3).
 */
import type { GeneratingArgs } from '../config/schema';
import type { Qwen2 } from '../model/qwen2';
import type { Tokenizer } from '../model/tokenizer';
import { generate } from '../model/generate';
import type { Policy, PolicyRequest, PolicyResponse } from './policy';

/** Wraps a model as a Policy; generation stops at the tokenizer's eos ids (kept in the response). */
export function modelPolicy(model: Qwen2, tokenizer: Tokenizer, args: GeneratingArgs): Policy {
  return {
    async generate(request: PolicyRequest): Promise<PolicyResponse> {
      return generate(model, request.contexts, {
        maxNewTokens: request.maxNewTokens,
        temperature: args.temperature,
        topP: args.top_p,
        topK: args.top_k,
        doSample: args.do_sample,
        stopIds: [...tokenizer.eosIds],
        rngs: request.rngs,
      });
    },
  };
}
