/**
 * Scripted policies for the warm-up demonstrations: they answer
 * "<answer>{action}</answer>" (or "<think></think><answer>{action}</answer>" for a think-pattern tag),
 * then the model's first stop token (<|im_end|> for Qwen2.5 instruct and the tiny preset), with
 * - randomActionPolicy: a uniformly random valid action from each row's seeded stream (format only;
 *   an env with free-form answers gets its solver's answer, see randomAction);
 * - solverPolicy: the first action of the env's shortest plan (Env.solve, BFS) from its current state,
 *   re-planned every turn; a random valid action when the env finds no plan (e.g. slippery FrozenLake).
 * Log-probs are reported as 0 (the episodes are demonstrations, not samples).
 */
import type { ChatTokenizer } from '../model/tokenizer';
import type { Rng } from '../util/rng';
import type { Policy, PolicyRequest, PolicyResponse, RowEnv } from './policy';

/** A policy that answers each row with `choose(env, rng)`, formatted for the row's pattern. */
function answeringPolicy(tokenizer: ChatTokenizer, choose: (env: RowEnv, rng: Rng) => string): Policy {
  const stop = tokenizer.decode(tokenizer.eosIds.slice(0, 1), false);
  return {
    async generate(request: PolicyRequest): Promise<PolicyResponse> {
      const tokens = request.envs.map((env, i) => {
        const answer = `<answer>${choose(env, request.rngs[i])}</answer>`;
        const text = `${env.enableThink ? '<think></think>' : ''}${answer}${stop}`;
        return tokenizer.encode(text).slice(0, request.maxNewTokens[i]);
      });
      return { tokens, logprobs: tokens.map((t) => t.map(() => 0)) };
    },
  };
}

/**
 * A uniformly random action name. An env with free-form answers and no action names (Countdown) has
 * no random valid action: it gets its solver's answer, or an empty answer without a solver.
 */
const randomAction = (env: RowEnv, rng: Rng) =>
  env.actionNames.length > 0 ? env.actionNames[rng.int(env.actionNames.length)] : (env.solve?.()?.[0] ?? '');

/** The random-valid-action policy. */
export function randomActionPolicy(tokenizer: ChatTokenizer): Policy {
  return answeringPolicy(tokenizer, randomAction);
}

/**
 * The solver policy: plays the env's BFS plan (Env.solve). A row whose env has no solve() or no plan
 * from its state gets a random valid action (from its stream), so every row still answers validly.
 */
export function solverPolicy(tokenizer: ChatTokenizer): Policy {
  return answeringPolicy(tokenizer, (env, rng) => env.solve?.()?.[0] ?? randomAction(env, rng));
}
