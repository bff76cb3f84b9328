/**
 * The policy backed by the Qwen2 decoder: batched KV-cache generation with generating_args
 * (temperature, top_p, top_k, do_sample) from each row's seeded stream (SPEC.md §4.3). Requests with
 * rowIds reuse each episode's KV cache from its previous turn (kv_session.ts) until endEpisodes.
 */
import type { GeneratingArgs } from '../config/schema';
import type { Qwen2 } from '../model/qwen2';
import type { ChatTokenizer } from '../model/tokenizer';
import { generate } from '../model/generate';
import { KvSession } from '../model/kv_session';
import type { Policy, PolicyRequest, PolicyResponse } from './policy';

/** Wraps a model as a Policy; generation stops at the tokenizer's eos ids, its model's stop tokens (kept in the response). */
export function modelPolicy(model: Qwen2, tokenizer: ChatTokenizer, args: GeneratingArgs): Policy {
  const session = new KvSession();
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
        session,
        rowIds: request.rowIds,
      });
    },
    endEpisodes(): void {
      session.clear();
    },
  };
}
