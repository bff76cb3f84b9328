/**
 * Why a truncated episode ended, played for real: the turn cap (custom_envs.<tag>.max_steps, or the env's
 * own step cap) or the sequence_length cut; env/{tag}/truncated_by_turn_cap and .../truncated_by_length
 * count each, env/{tag}/truncated their union; the report says which.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Trajectory } from '../../../src/contract';
import { charTokenizer } from '../../../src/model/tokenizer';
import { loadConfigFile } from '../../../src/preflight/load';
import { outcomeText } from '../../../src/report/groups';
import { type EpisodeSpec, runEpisodes } from '../../../src/rollout/manager';
import { meanMetrics, sumMetrics } from '../../../src/rollout/metrics';
import type { Policy } from '../../../src/rollout/policy';

const tokenizer = charTokenizer();
const { config } = loadConfigFile('configs/frozen_lake.yaml');
const lake = config.custom_envs.FrozenLake;
const spec: EpisodeSpec = {
  tag: 'FrozenLake',
  groupId: 0,
  envId: 0,
  seed: 1000,
  trajGroupId: 'FrozenLake_0_0_1000',
  rngParts: [7, 'train', 0, 0],
};
const opts = { tokenizer, customEnvs: config.custom_envs, sequenceLength: 768, maxNewTokens: 24, split: 'train' as const, step: 0 };

/** Answers `text` every turn, cut to the turn's token budget. */
const saying = (text: string): Policy => ({
  async generate(req) {
    const tokens = req.contexts.map((_, i) => tokenizer.encode(text).slice(0, req.maxNewTokens[i]));
    return { tokens, logprobs: tokens.map((t) => t.map(() => -1)) };
  },
});
// An unknown action never moves the player, so only a cap ends the episode.
const stuck = saying('<answer>Jump</answer><|im_end|>');

const metricsOf = (trajectories: Trajectory[]) => meanMetrics(sumMetrics(trajectories));

test('the turn cap of custom_envs.<tag>.max_steps: truncatedBy max_steps, counted as truncated_by_turn_cap', async () => {
  const [t] = await runEpisodes([spec], { ...opts, policy: stuck });
  assert.equal(t.turns.length, lake.max_steps);
  assert.deepEqual([t.truncated, t.truncatedBy], [true, 'max_steps']);
  const m = metricsOf([t]);
  assert.deepEqual(
    [m['env/FrozenLake/truncated'], m['env/FrozenLake/truncated_by_turn_cap'], m['env/FrozenLake/truncated_by_length']],
    [1, 1, 0],
  );
  assert.equal(outcomeText(t), 'truncated by the turn cap');
});

test("the env's own step cap (frozen_lake env_config.max_steps, info.truncated) is the turn cap too", async () => {
  const customEnvs = { FrozenLake: { ...lake, env_config: { ...lake.env_config, max_steps: 3 } } };
  const [t] = await runEpisodes([spec], { ...opts, customEnvs, policy: stuck });
  assert.equal(t.turns.length, 3);
  assert.deepEqual([t.truncated, t.truncatedBy], [true, 'max_steps']);
  assert.equal(metricsOf([t])['env/FrozenLake/truncated_by_turn_cap'], 1);
});

test('the sequence_length cut: truncatedBy max_length, counted as truncated_by_length', async () => {
  const [t] = await runEpisodes([spec], { ...opts, sequenceLength: 250, policy: stuck });
  assert.ok(t.turns.length < lake.max_steps, `${t.turns.length} turns`);
  assert.deepEqual([t.truncated, t.truncatedBy], [true, 'max_length']);
  const m = metricsOf([t]);
  assert.deepEqual(
    [m['env/FrozenLake/truncated'], m['env/FrozenLake/truncated_by_turn_cap'], m['env/FrozenLake/truncated_by_length']],
    [1, 0, 1],
  );
  assert.equal(outcomeText(t), 'truncated by sequence_length');
});

test('over a batch, truncated is the sum of its two causes; an episode the env ends is neither', async () => {
  const [capped] = await runEpisodes([spec], { ...opts, policy: stuck });
  const [cut] = await runEpisodes([spec], { ...opts, sequenceLength: 250, policy: stuck });
  // The solver's moves reach the goal: the env ends the episode before any cap.
  const solver: Policy = {
    async generate(req) {
      const tokens = req.envs.map((e) => tokenizer.encode(`<answer>${e.solve?.()?.[0]}</answer><|im_end|>`));
      return { tokens, logprobs: tokens.map((t) => t.map(() => -1)) };
    },
  };
  const [ended] = await runEpisodes([spec], { ...opts, policy: solver });
  assert.deepEqual([ended.success, ended.truncated, ended.truncatedBy], [true, false, undefined], `${ended.turns.length} turns`);
  const m = metricsOf([capped, cut, ended, ended]);
  assert.equal(m['env/FrozenLake/truncated_by_turn_cap'], 0.25);
  assert.equal(m['env/FrozenLake/truncated_by_length'], 0.25);
  assert.equal(m['env/FrozenLake/truncated'], m['env/FrozenLake/truncated_by_turn_cap'] + m['env/FrozenLake/truncated_by_length']);
});
