/**
 * Per-tag templates and answer patterns (docs/numerics.md §4.1, §4.4): every agent_template field is filled,
 * {suffix} states the tag's answer format, a tag whose action_pattern is ROLL's think pattern parses
 * <think>...</think><answer>...</answer>, and max_steps / max_tokens_per_step hold per tag when several
 * tags share one lockstep batch.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { customEnvSchema } from '../../../src/contract';
import { charTokenizer } from '../../../src/model/tokenizer';
import { fillTemplate, formatSuffix, usesThinkPattern } from '../../../src/rollout/chat';
import { type EpisodeSpec, runEpisodes } from '../../../src/rollout/manager';
import type { Policy } from '../../../src/rollout/policy';

const tokenizer = charTokenizer();
const THINK = '<think>(.*?)</think>\\s*<answer>(.*?)</answer>';
const ALL_FIELDS = 'T{turn_idx} O{observation} A{actions_left} M{max_response_length} S{suffix}';
const lake = (extra: Record<string, unknown>, envConfig: Record<string, unknown> = {}) =>
  customEnvSchema.parse({
    env_type: 'frozen_lake',
    agent_system_template: '',
    env_config: { is_slippery: false, format_penalty: -0.01, ...envConfig },
    ...extra,
  });

function spec(tag: string, envId: number): EpisodeSpec {
  return { tag, groupId: envId, envId, seed: 100 + envId, trajGroupId: `${tag}_${envId}_0_${100 + envId}`, rngParts: [1, envId] };
}

/** Answers every row with `text`, cut to the row's budget; records every context it saw. */
function fixedPolicy(text: string, seen: string[] = []): Policy {
  return {
    async generate(req) {
      seen.push(...req.contexts.map((c) => tokenizer.decode(c, false)));
      const tokens = req.contexts.map((_, i) => tokenizer.encode(text).slice(0, req.maxNewTokens[i]));
      return { tokens, logprobs: tokens.map((t) => t.map(() => -1)) };
    },
  };
}

const opts = { tokenizer, sequenceLength: 4000, maxNewTokens: 64, split: 'train' as const, step: 0 };

test('fillTemplate fills all five fields of docs/numerics.md §4.1', () => {
  const out = fillTemplate(ALL_FIELDS, { turn_idx: 2, observation: 'P_G', actions_left: 9, max_response_length: 24, suffix: 'fmt' });
  assert.equal(out, 'T2 OP_G A9 M24 Sfmt');
});

test('{suffix} is the answer format of the tag: answer-only, or think-then-answer for the think pattern', () => {
  assert.equal(formatSuffix(false), 'Always output: <answer> [your answer] </answer> with no extra text. Strictly follow this format.');
  assert.equal(
    formatSuffix(true),
    'Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> with no extra text. Strictly follow this format.',
  );
  assert.equal(usesThinkPattern({ action_pattern: THINK }), true);
  assert.equal(usesThinkPattern({ action_pattern: '<answer>(.*?)</answer>' }), false);
  assert.equal(usesThinkPattern({}), false);
});

test('the manager fills every field on every turn: turn_idx 1-based, actions_left counting down', async () => {
  const seen: string[] = [];
  const customEnvs = { Lake: lake({ max_steps: 3, max_tokens_per_step: 24, agent_template: ALL_FIELDS }) };
  const [t] = await runEpisodes([spec('Lake', 0)], { ...opts, customEnvs, policy: fixedPolicy('<answer>Jump</answer><|im_end|>', seen) });
  assert.equal(t.turns.length, 3);
  const lastUser = (context: string) => context.split('<|im_start|>user\n').pop()!.split('<|im_end|>')[0];
  const users = seen.map(lastUser);
  users.forEach((u, i) => {
    assert.ok(!/\{\w+\}/.test(u), `unfilled field in ${JSON.stringify(u)}`);
    assert.ok(u.includes(`T${i + 1} O${t.turns[i].observation} A${3 - i} M24 S${formatSuffix(false)}`), u);
  });
});

test('a think-pattern tag parses <think>..</think><answer>..</answer>; the same reply without think is invalid there', async () => {
  const customEnvs = {
    Think: lake({ max_steps: 1, agent_template: '{observation} {suffix}' }, { action_pattern: THINK }),
    Plain: lake({ max_steps: 1, agent_template: '{observation} {suffix}' }),
  };
  const thinkReply = '<think>go right</think> <answer>Right</answer><|im_end|>';
  const [think, plain] = await runEpisodes([spec('Think', 0), spec('Plain', 1)], { ...opts, customEnvs, policy: fixedPolicy(thinkReply) });
  assert.deepEqual([think.turns[0].actionIsValid, think.turns[0].action], [true, 'Right']);
  assert.deepEqual([plain.turns[0].actionIsValid, plain.turns[0].action], [true, 'Right'], 'answer-only finds the <answer> anywhere');
  const [bare] = await runEpisodes([spec('Think', 0)], { ...opts, customEnvs, policy: fixedPolicy('<answer>Right</answer><|im_end|>') });
  assert.deepEqual([bare.turns[0].actionIsValid, bare.turns[0].action, bare.episodeScore], [false, null, -0.01]);
  assert.ok(tokenizer.decode(think.inputIds, false).includes(formatSuffix(true)));
});

test('max_steps and max_tokens_per_step hold per tag in one mixed batch', async () => {
  const customEnvs = {
    Short: lake({ max_steps: 2, max_tokens_per_step: 30, agent_template: 'S {observation}' }),
    Long: lake({ max_steps: 5, max_tokens_per_step: 12, agent_template: 'L {observation}' }),
  };
  // never a stop token and never a valid action: every reply uses its whole budget, no episode terminates
  const trajs = await runEpisodes([spec('Short', 0), spec('Long', 1), spec('Short', 2), spec('Long', 3)], {
    ...opts,
    customEnvs,
    policy: fixedPolicy('x'.repeat(100)),
  });
  assert.deepEqual(
    trajs.map((t) => t.turns.length),
    [2, 5, 2, 5],
  );
  assert.deepEqual(
    trajs.map((t) => t.turns.map((u) => u.response.length)),
    [
      [30, 30],
      [12, 12, 12, 12, 12],
      [30, 30],
      [12, 12, 12, 12, 12],
    ],
  );
  assert.ok(trajs.every((t) => t.truncated));
  // the global cap applies too: min(max_tokens_per_step, generating_args.max_new_tokens)
  const capped = await runEpisodes([spec('Short', 0)], { ...opts, maxNewTokens: 20, customEnvs, policy: fixedPolicy('x'.repeat(100)) });
  assert.deepEqual(
    capped[0].turns.map((u) => u.response.length),
    [20, 20],
  );
});
