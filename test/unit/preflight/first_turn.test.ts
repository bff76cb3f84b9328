/** sequence_length checked before a run against the first turn of every tag, as the rollout renders it. */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readPretrainedTokenizer } from '../../../src/model/hf/folder';
import { type ChatTokenizer, charTokenizer } from '../../../src/model/tokenizer';
import { loadConfigFile } from '../../../src/preflight/load';
import { randomActionPolicy } from '../../../src/rollout/demonstrations';
import { runEpisodes } from '../../../src/rollout/manager';
import { planShards } from '../../../src/rollout/plan';
import { configErrorOf } from '../../helpers/config_error';
import { materializeHfVariant, removeHfFolder } from '../../helpers/hf_models';

const NEEDS =
  /^`sequence_length`(?: \(from `[^`]+` on the command line\))?: (\d+) leaves no room for the first turn of tag (\w+) \(([\w ]+)\): its prompt is (\d+) tokens and a reply may take (\d+); allowed: >= (\d+)/;

test('a sequence_length too short for the first turn is refused at load, naming the value, the tag and the tokens needed', () => {
  const err = configErrorOf(() => loadConfigFile('configs/frozen_lake.yaml', ['sequence_length=100']));
  assert.equal(err.problems.length, 1, err.message);
  const [, value, tag, managers, prompt, reply, needed] = NEEDS.exec(err.problems[0]) ?? assert.fail(err.message);
  assert.deepEqual([value, tag, managers], ['100', 'FrozenLake', 'train_env_manager and val_env_manager']);
  assert.equal(Number(needed), Number(prompt) + Number(reply));
  assert.equal(Number(reply), 24, 'min(max_tokens_per_step, max_new_tokens)');
  assert.doesNotThrow(() => loadConfigFile('configs/frozen_lake.yaml', [`sequence_length=${needed}`]));
});

/**
 * The needed length the check reports for `overrides`, after asserting that the rollout (a scripted
 * policy, so no model is run) plays the states the check measured at that length and refuses one token less.
 */
async function checkAndRolloutAgree(overrides: string[], tokenizer: ChatTokenizer): Promise<number> {
  const problem = configErrorOf(() => loadConfigFile('configs/frozen_lake.yaml', [...overrides, 'sequence_length=20'])).problems[0];
  const needed = Number((NEEDS.exec(problem) ?? assert.fail(problem))[6]);
  const { config } = loadConfigFile('configs/frozen_lake.yaml', [...overrides, `sequence_length=${needed}`]);
  // The states the check measures (their first prompts differ in length under a BPE tokenizer).
  const groups = [...planShards(config, 'train', 0).flat(), ...planShards(config, 'val', 0).flat().slice(0, 16)];
  const specs = groups.map((g, envId) => ({
    tag: g.tag,
    groupId: envId,
    envId,
    seed: g.seed,
    trajGroupId: g.trajGroupId,
    rngParts: [...g.stream, envId],
  }));
  const opts = {
    tokenizer,
    policy: randomActionPolicy(tokenizer),
    customEnvs: config.custom_envs,
    maxNewTokens: 24,
    split: 'train' as const,
    step: 0,
  };
  const played = await runEpisodes(specs, { ...opts, sequenceLength: needed });
  assert.ok(played.every((t) => t.inputIds.length <= needed));
  await assert.rejects(runEpisodes(specs, { ...opts, sequenceLength: needed - 1 }), (err: Error) => err.name === 'ConfigError');
  return needed;
}

test('the check and the rollout agree: one token less than the needed length stops the first rollout, the needed length plays it', async () => {
  await checkAndRolloutAgree([], charTokenizer());
});

test("with an HF model folder, the first turn is measured with that folder's tokenizer and chat template", async () => {
  const dir = materializeHfVariant('tied_gqa');
  try {
    const hf = await checkAndRolloutAgree([`pretrain=${dir}`], readPretrainedTokenizer(dir));
    const tiny = await checkAndRolloutAgree([], charTokenizer());
    assert.notEqual(hf, tiny, 'the Qwen2.5 tokenizer and template give another length than the tiny char tokenizer');
  } finally {
    removeHfFolder(dir);
  }
});

test('each tag is checked on its own: in a mixed config only the tag whose first turn does not fit is named', () => {
  const err = configErrorOf(() => loadConfigFile('configs/mixed_frozen_lake_sokoban.yaml', ['sequence_length=150']));
  assert.equal(err.problems.length, 1, err.message);
  const [, value, tag] = NEEDS.exec(err.problems[0]) ?? assert.fail(err.message);
  assert.deepEqual([value, tag], ['150', 'SimpleSokoban']);
});

test('a val-only tag is checked too, with the val manager named', () => {
  const err = configErrorOf(() =>
    loadConfigFile('configs/mixed_frozen_lake_sokoban.yaml', [
      'sequence_length=150',
      'train_env_manager.tags=[FrozenLake]',
      'train_env_manager.num_groups_partition=[8]',
    ]),
  );
  assert.equal(err.problems.length, 1, err.message);
  const [, , tag, managers] = NEEDS.exec(err.problems[0]) ?? assert.fail(err.message);
  assert.deepEqual([tag, managers], ['SimpleSokoban', 'val_env_manager']);
});

const SHORT_REPLY =
  /^`([\w.]+)`(?: \(from [^)]+\))? \((\d+)\) cannot hold every valid answer of tag (\w+) \(([\w ]+)\): ([\w, ]+) never fits? \(up to (.+), (\d+) tokens\), so those replies are cut off and parse as invalid; allowed: >= (\d+)$/;

/** The reply-budget warnings of configs/frozen_lake.yaml with `overrides`, parsed. */
const budgetWarnings = (overrides: string[]) =>
  loadConfigFile('configs/frozen_lake.yaml', overrides)
    .warnings.map((w) => SHORT_REPLY.exec(w))
    .filter((m) => m !== null);

test('a reply budget that cannot hold every valid answer is a warning naming the key that sets it, the managers and the actions cut off', () => {
  assert.deepEqual(budgetWarnings([]), []);
  const [m] = budgetWarnings(['actor_infer.generating_args.max_new_tokens=5']);
  const [, key, budget, tag, managers, cut, longest, tokens, allowed] = m ?? assert.fail('no warning');
  assert.deepEqual(
    [key, budget, tag, managers, cut, longest],
    [
      'actor_infer.generating_args.max_new_tokens',
      '5',
      'FrozenLake',
      'train_env_manager and val_env_manager',
      'Left, Down, Right, Up',
      '<answer>Right</answer>',
    ],
  );
  assert.equal(Number(tokens), charTokenizer().encode(longest).length);
  assert.equal(allowed, tokens);
  assert.deepEqual(budgetWarnings([`actor_infer.generating_args.max_new_tokens=${allowed}`]), []);
  // Room for Up only: the other three actions can never be taken.
  const upOnly = charTokenizer().encode('<answer>Up</answer>').length;
  const perStep = budgetWarnings([`custom_envs.FrozenLake.max_tokens_per_step=${upOnly}`]).map((w) => [w[1], w[5]]);
  assert.deepEqual(perStep, [['custom_envs.FrozenLake.max_tokens_per_step', 'Left, Down, Right']]);
  const val = budgetWarnings(['val_env_manager.generating_args.max_new_tokens=12']).map((w) => [w[1], w[4]]);
  assert.deepEqual(val, [['val_env_manager.generating_args.max_new_tokens', 'val_env_manager']]);
});

test('the warning and the rollout agree: one token under the allowed budget the longest answer is cut off, at it every answer parses', async () => {
  const [m] = budgetWarnings(['actor_infer.generating_args.max_new_tokens=5']);
  const allowed = Number((m ?? assert.fail('no warning'))[8]);
  const { config } = loadConfigFile('configs/frozen_lake.yaml');
  const specs = planShards(config, 'train', 0)
    .flat()
    .map((g, envId) => ({ tag: g.tag, groupId: envId, envId, seed: g.seed, trajGroupId: g.trajGroupId, rngParts: [...g.stream, envId] }));
  const tokenizer = charTokenizer();
  const play = async (maxNewTokens: number) =>
    (
      await runEpisodes(specs, {
        tokenizer,
        policy: randomActionPolicy(tokenizer),
        customEnvs: config.custom_envs,
        maxNewTokens,
        sequenceLength: config.sequence_length,
        split: 'train' as const,
        step: 0,
      })
    ).flatMap((t) => t.turns);
  const under = await play(allowed - 1);
  assert.ok(
    under.some((t) => t.response.includes('<answer>Righ') && !t.actionIsValid),
    'Right is cut off',
  );
  assert.ok(under.every((t) => !t.response.includes('<answer>Righ') || !t.actionIsValid));
  const at = await play(allowed);
  assert.ok(at.length > 0 && at.every((t) => t.actionIsValid), 'every answer fits the allowed budget');
});
