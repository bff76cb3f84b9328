/**
 * Asynchronous rollouts' bookkeeping (src/algo/staleness.ts) and its use in the update: staleness per
 * trajectory, the discard of groups older than async_generation_ratio allows (with its metrics), and the
 * old log-probs of the PPO ratio (sampling log-probs for stale trajectories, recomputed for the others).
 */

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { AdamW } from '../../../src/algo/adamw';
import { packBatch } from '../../../src/algo/batch';
import { klControllerFromConfig } from '../../../src/algo/kl';
import { dropStale, oldLogpRows, stalenessOf } from '../../../src/algo/staleness';
import { ppoUpdate } from '../../../src/algo/update';
import type { RunConfig, Trajectory } from '../../../src/contract';
import { tinyPreset } from '../../../src/model/config';
import { tokenLogProbs } from '../../../src/model/logprobs';
import { Qwen2 } from '../../../src/model/qwen2';
import { charTokenizer } from '../../../src/model/tokenizer';
import { initTestBackend } from '../../helpers/backend';
import { fixtureConfig, fixtureDemos } from '../../helpers/fixture';

const tokenizer = charTokenizer();
let demos: Trajectory[] = [];

before(async () => {
  await initTestBackend();
  demos = await fixtureDemos(16);
});

/** A trajectory of group `group` played for `step`, `staleness` versions behind it. */
const traj = (group: number, step: number, staleness?: number) =>
  ({
    trajGroupId: `g${group}`,
    trajId: `g${group}_${Math.random()}`,
    step,
    ...(staleness === undefined ? {} : { staleness }),
  }) as Trajectory;

test('stalenessOf: versions between the sampling policy and the update (absent staleness = 0)', () => {
  assert.equal(stalenessOf(traj(0, 5), 5), 0);
  assert.equal(stalenessOf(traj(0, 5, 1), 5), 1);
  assert.equal(stalenessOf(traj(0, 4, 1), 5), 2, "played for step 4 by step 3's policy, consumed by step 5");
});

test('dropStale: whole groups older than the ratio are dropped and counted; staleness mean/max over all received', () => {
  const batch = [traj(0, 3, 1), traj(0, 3, 1), traj(1, 3, 2), traj(1, 3, 1), traj(2, 3, 0), traj(2, 3, 0)];
  const r1 = dropStale(batch, 3, 1);
  assert.deepEqual(
    r1.kept.map((t) => t.trajGroupId),
    ['g0', 'g0', 'g2', 'g2'],
    'group g1 has a member 2 versions old: the whole group goes',
  );
  assert.deepEqual(r1.metrics, { 'rollout/staleness/mean': 5 / 6, 'rollout/staleness/max': 2, 'rollout/discarded_stale': 2 });
  const r2 = dropStale(batch, 3, 2);
  assert.equal(r2.kept.length, 6);
  assert.equal(r2.metrics['rollout/discarded_stale'], 0);
});

test('oldLogpRows: sampled log-probs for stale rows, recomputed for the others; on-policy rows need the recomputed ones', () => {
  const sampled = [
    [-1, -2],
    [-3, -4],
  ];
  const recomputed = [
    [-1.5, -2.5],
    [-3.5, -4.5],
  ];
  assert.deepEqual(oldLogpRows([true, false], sampled, recomputed), [
    [-1, -2],
    [-3.5, -4.5],
  ]);
  assert.deepEqual(oldLogpRows([true, true], sampled, null), sampled);
  assert.throws(() => oldLogpRows([true, false], sampled, null), /row 1 is on-policy but no recomputed old log-probs/);
});

/** `demos` in 4 groups of 4 for `step`, with sampleLogprobs = the model's own log-probs + `shift` on sampled tokens. */
function withSampleLogprobs(model: Qwen2, step: number, staleness: number | undefined, shift: number): Trajectory[] {
  const batch = packBatch(demos, tokenizer.padId);
  const logp = tf.tidy(() => tokenLogProbs(model, batch.ids, batch.attentionMask).logp.arraySync());
  batch.ids.dispose();
  batch.attentionMask.dispose();
  return demos.map((t, i) => ({
    ...t,
    step,
    ...(staleness === undefined ? {} : { staleness }),
    trajGroupId: `FrozenLake_${Math.floor(i / 4)}_0_1`,
    episodeScore: (i % 4) * 0.25,
    sampleLogprobs: t.inputIds.map((_, k) => (k > 0 && t.responseMask[k] === 1 ? logp[i][k - 1] + shift : 0)),
  }));
}

async function update(config: RunConfig, trajectories: (model: Qwen2) => Trajectory[], seed: number) {
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), seed);
  const out = await ppoUpdate({
    actor: { model, optimizer: new AdamW({}), lr: () => 1e-3 },
    klController: klControllerFromConfig(config),
    trajectories: trajectories(model),
    config,
    step: 4,
    padId: tokenizer.padId,
  });
  model.dispose();
  return out;
}

test('ppoUpdate: stale trajectories use their sampling log-probs as old log-probs; on-policy ones the current policy', async () => {
  // one minibatch, one epoch: before the optimizer step logp is the current policy, so policykl = mean(logp - old) is minus
  // the shift used (ROLL's sign)
  const config = fixtureConfig({
    async_generation_ratio: 1,
    actor_train: { training_args: { per_device_train_batch_size: 8, gradient_accumulation_steps: 2 } },
  });
  const stale = await update(config, (m) => withSampleLogprobs(m, 4, 1, 0.3), 11);
  assert.equal(stale.skipReason, null);
  assert.ok(Math.abs(stale.metrics['actor/policykl'] + 0.3) < 1e-3, `policykl ${stale.metrics['actor/policykl']}`);
  assert.ok(Math.abs(stale.metrics['actor/ratio_mean'] - Math.exp(-0.3)) < 1e-3, `ratio_mean ${stale.metrics['actor/ratio_mean']}`);
  assert.equal(stale.metrics['rollout/staleness/mean'], 1);
  assert.equal(stale.metrics['rollout/staleness/max'], 1);
  assert.equal(stale.metrics['rollout/discarded_stale'], 0);

  const fresh = await update(config, (m) => withSampleLogprobs(m, 4, 0, 0.3), 11);
  assert.ok(Math.abs(fresh.metrics['actor/policykl']) < 1e-6, 'on-policy: the sampled log-probs are not used');
  assert.ok(Math.abs(fresh.metrics['actor/ratio_mean'] - 1) < 1e-6);
  assert.equal(fresh.metrics['rollout/staleness/mean'], 0);

  // half the groups stale: their shift shows in policykl, the on-policy half (recomputed) adds 0
  const mixed = await update(config, (m) => withSampleLogprobs(m, 4, 1, 0.3).map((t, i) => (i < 8 ? { ...t, staleness: 0 } : t)), 11);
  assert.ok(
    mixed.metrics['actor/policykl'] < -0.05 && mixed.metrics['actor/policykl'] > -0.25,
    `policykl ${mixed.metrics['actor/policykl']}`,
  );
  assert.equal(mixed.metrics['rollout/staleness/mean'], 0.5);
});

test('ppoUpdate: groups older than async_generation_ratio are discarded; when none is left the update is skipped', async () => {
  const config = fixtureConfig({
    async_generation_ratio: 1,
    actor_train: { training_args: { per_device_train_batch_size: 8, gradient_accumulation_steps: 2 } },
  });
  const partly = await update(config, (m) => withSampleLogprobs(m, 4, 1, 0).map((t, i) => (i < 4 ? { ...t, staleness: 2 } : t)), 12);
  assert.equal(partly.skipReason, null);
  assert.equal(partly.metrics['rollout/discarded_stale'], 4);
  assert.equal(partly.metrics['rollout/kept_groups'], 3, 'the filter sees the 3 groups within the ratio');
  assert.equal(Object.keys(partly.scores.trajectories).length, 12, 'scores of the trajectories the update used');

  const none = await update(config, (m) => withSampleLogprobs(m, 4, 2, 0), 12);
  assert.match(none.skipReason ?? '', /all 16 trajectories are more than async_generation_ratio \(1\) policy versions old/);
  assert.equal(none.metrics['rollout/discarded_stale'], 16);
  assert.equal(none.metrics['actor/update_skipped'], 1);
});

test('synchronous runs (r = 0) report no staleness metrics', async () => {
  const config = fixtureConfig({ actor_train: { training_args: { per_device_train_batch_size: 8, gradient_accumulation_steps: 2 } } });
  const out = await update(config, (m) => withSampleLogprobs(m, 4, undefined, 0), 13);
  assert.ok(!('rollout/staleness/mean' in out.metrics));
  assert.ok(Math.abs(out.metrics['actor/ratio_mean'] - 1) < 1e-6);
});
