import assert from 'node:assert/strict';
import { test } from 'node:test';
import { charTokenizer } from '../../../src/model/tokenizer';
import { loadConfigFile } from '../../../src/preflight/load';
import { randomActionPolicy } from '../../../src/rollout/demonstrations';
import { type EpisodeSpec, runEpisodes } from '../../../src/rollout/manager';
import type { Policy } from '../../../src/rollout/policy';
import '../../helpers/chaos_env'; // registers env type chaos

const tokenizer = charTokenizer();
const { config } = loadConfigFile('configs/frozen_lake.yaml');

function specs(n: number, groupSize: number): EpisodeSpec[] {
  return Array.from({ length: n }, (_, envId) => {
    const groupId = Math.floor(envId / groupSize);
    const seed = 1000 + groupId;
    return { tag: 'FrozenLake', groupId, envId, seed, trajGroupId: `FrozenLake_${groupId}_0_${seed}`, rngParts: [7, 'train', 0, envId] };
  });
}

const baseOpts = { tokenizer, customEnvs: config.custom_envs, sequenceLength: 768, maxNewTokens: 24, split: 'train' as const, step: 0 };

test('packing: ids are prompt/response concatenations; mask covers exactly the sampled tokens', async () => {
  const trajs = await runEpisodes(specs(8, 4), { ...baseOpts, policy: randomActionPolicy(tokenizer) });
  assert.equal(trajs.length, 8);
  const imEnd = tokenizer.specialTokens['<|im_end|>'];
  for (const t of trajs) {
    assert.equal(t.inputIds.length, t.responseMask.length);
    assert.equal(t.sampleLogprobs.length, t.inputIds.length);
    const sampled = t.inputIds.filter((_, i) => t.responseMask[i] === 1);
    const expected = t.turns.flatMap((u) => tokenizer.encode(u.response));
    assert.deepEqual(sampled, expected);
    assert.ok(t.turns.length >= 1 && t.turns.length <= 10);
    assert.ok(t.turns.every((u) => u.actionIsValid));
    assert.equal(
      t.episodeScore,
      t.turns.reduce((a, u) => a + u.reward, 0),
    );
    // each response ends with its stop token, and the text is the ChatML template of the chat
    assert.ok(t.turns.every((u) => u.response.endsWith('<|im_end|>')));
    const text = tokenizer.decode(t.inputIds, false);
    assert.ok(text.startsWith('<|im_start|>user\nFrozenLake'), text.slice(0, 40));
    assert.equal(text.split('<|im_start|>assistant\n').length - 1, t.turns.length);
    assert.equal(t.inputIds.filter((id) => id === imEnd).length, 2 * t.turns.length);
  }
});

test('group members start from the same state; replaying gives identical trajectories', async () => {
  const a = await runEpisodes(specs(8, 4), { ...baseOpts, policy: randomActionPolicy(tokenizer) });
  const b = await runEpisodes(specs(8, 4), { ...baseOpts, policy: randomActionPolicy(tokenizer) });
  assert.deepEqual(a, b);
  assert.equal(a[0].turns[0].observation, a[3].turns[0].observation);
  assert.equal(a[0].trajId, `${a[0].trajGroupId}_0`);
});

test('an invalid answer costs the format penalty; the turn cap truncates', async () => {
  const babble: Policy = {
    async generate(req) {
      const tokens = req.contexts.map(() => tokenizer.encode('hello<|im_end|>'));
      return { tokens, logprobs: tokens.map((t) => t.map(() => -1)) };
    },
  };
  const [t] = await runEpisodes(specs(1, 1), { ...baseOpts, policy: babble });
  assert.equal(t.turns.length, 10);
  assert.ok(t.truncated);
  assert.ok(Math.abs(t.episodeScore - -0.1) < 1e-9);
  assert.ok(t.turns.every((u) => !u.actionIsValid && u.action === null));
});

test('the sequence_length cut drops the unfinished turn', async () => {
  const babble: Policy = {
    async generate(req) {
      const tokens = req.contexts.map((_, i) => tokenizer.encode('<answer>Jump</answer><|im_end|>').slice(0, req.maxNewTokens[i]));
      return { tokens, logprobs: tokens.map((t) => t.map(() => -1)) };
    },
  };
  // invalid answers never end the episode, so only the 250-token cut can stop it before 10 turns
  const [t] = await runEpisodes(specs(1, 1), { ...baseOpts, sequenceLength: 250, policy: babble });
  assert.ok(t.truncated);
  assert.ok(t.turns.length >= 1 && t.turns.length < 10, `${t.turns.length} turns`);
  assert.ok(t.inputIds.length <= 250);
  // the kept turns are whole: the ids end with the last turn's stop token
  assert.equal(t.inputIds[t.inputIds.length - 1], tokenizer.specialTokens['<|im_end|>']);
});

test('a sequence_length that cannot hold the first turn is a config error naming the key', async () => {
  await assert.rejects(
    runEpisodes(specs(1, 1), { ...baseOpts, sequenceLength: 40, policy: randomActionPolicy(tokenizer) }),
    (err: Error) =>
      err.name === 'ConfigError' &&
      /sequence_length[\s\S]*40 leaves no room for the first turn of tag FrozenLake: its prompt is \d+ tokens/.test(err.message),
  );
});

test('runEpisodes throws an env failure with its tag, env id, group and seed (the pool catches them instead)', async () => {
  const customEnvs = {
    ...config.custom_envs,
    FrozenLake: {
      ...config.custom_envs.FrozenLake,
      env_type: 'chaos',
      env_config: {
        inner_env_type: 'frozen_lake',
        inner_env_config: config.custom_envs.FrozenLake.env_config,
        throw_on_reset: true,
        env_ids: [2],
      },
    },
  };
  await assert.rejects(
    runEpisodes(specs(4, 4), { ...baseOpts, customEnvs, policy: randomActionPolicy(tokenizer) }),
    /^Error: FrozenLake env 2 \(group 0, seed 1000\): reset threw: chaos: injected failure in reset \(env id 2, seed 1000\)$/,
  );
});
