import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { AdamW } from '../../../src/algo/adamw';
import { paddedLength } from '../../../src/algo/batch';
import { klControllerFromConfig } from '../../../src/algo/kl';
import { noGradPass } from '../../../src/algo/micro_batches';
import { criticStepsPerUpdate, groupKeyOf, needsReference, optimizerStepsPerUpdate, ppoUpdate } from '../../../src/algo/update';
import type { Trajectory } from '../../../src/contract';
import { tinyPreset } from '../../../src/model/config';
import { Qwen2 } from '../../../src/model/qwen2';
import { charTokenizer } from '../../../src/model/tokenizer';
import { VALUE_HEAD, ValueModel } from '../../../src/model/value_model';
import { shiftedArrays } from '../../../src/rollout/packing';
import { initTestBackend } from '../../helpers/backend';
import { fixtureConfig, fixtureDemos } from '../../helpers/fixture';

const tokenizer = charTokenizer();
let demos: Trajectory[] = [];

before(async () => {
  await initTestBackend();
  demos = await fixtureDemos(16);
});

/** 16 format episodes as 4 groups of 4 with the given scores (group g = trajectories 4g..4g+3). */
function batch(scores: number[]): Trajectory[] {
  return demos.map((t, i) => ({ ...t, trajGroupId: `FrozenLake_${Math.floor(i / 4)}_0_1`, episodeScore: scores[i] }));
}
const spread = Array.from({ length: 16 }, (_, i) => (i % 4) * 0.25);

const snapshot = (m: Qwen2) => Array.from((m.trainableVariables().get('model.norm.weight') as tf.Variable).dataSync());
const trainee = <M>(model: M) => ({ model, optimizer: new AdamW({}), lr: () => 1e-3 });

test('reinforce: ratio 1 in the only minibatch, finite metrics with time split, weights move', async () => {
  const config = fixtureConfig({ actor_train: { training_args: { per_device_train_batch_size: 8, gradient_accumulation_steps: 2 } } });
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 5);
  const before = snapshot(model);
  const { metrics, skipReason } = await ppoUpdate({
    actor: trainee(model),
    klController: klControllerFromConfig(config),
    trajectories: batch(spread),
    config,
    step: 0,
    padId: tokenizer.padId,
  });
  assert.equal(skipReason, null);
  for (const [k, v] of Object.entries(metrics)) assert.ok(Number.isFinite(v), `${k} = ${v}`);
  assert.equal(metrics['actor/optimizer_steps'], 1);
  assert.ok(Math.abs(metrics['actor/ratio_mean'] - 1) < 1e-6);
  assert.ok(metrics['actor/grad_norm'] > 0 && metrics['actor/entropy'] > 0);
  assert.ok(metrics['time/update/forward'] > 0 && metrics['time/update/backward'] > 0);
  // no filter (ratio 1): every group kept; in-group std of scores 0, .25, .5, .75 = 0.3227 (unbiased)
  assert.equal(metrics['rollout/kept_groups'], 4);
  assert.ok(Math.abs(metrics['rollout/in_group_std'] - 0.3227486) < 1e-6);
  assert.notDeepEqual(snapshot(model), before);
  model.dispose();
});

/** Mean log-prob (nats) of each trajectory's sampled tokens under `model`. */
async function sampledLogp(model: Qwen2, trajectories: Trajectory[]): Promise<number[]> {
  const T = paddedLength(trajectories);
  const { mask } = shiftedArrays(trajectories, T + 1);
  const pre = await noGradPass({ actor: model, trajectories, T, padId: tokenizer.padId, microSize: 8, oldLogp: true, klPenalty: 'kl' });
  return pre.oldLogp!.map((row, i) => row.reduce((s, v, t) => s + v * mask[i][t], 0) / mask[i].reduce((a, b) => a + b, 0));
}

test("one update raises the log-probs of the positive-advantage trajectory's tokens and lowers the negative one's", async () => {
  // one group of two with the same prompts: the first replies as sampled (score 1), the second replies 'x' everywhere
  // (score 0); mean_std within the group: A = +-0.5 / (0.7071068 + 1e-6) on every sampled token
  const config = fixtureConfig({ actor_train: { training_args: { per_device_train_batch_size: 8, gradient_accumulation_steps: 2 } } });
  const base = demos[0];
  const x = tokenizer.encode('x')[0];
  const trajectories: Trajectory[] = [
    { ...base, trajId: 'pos', trajGroupId: 'g', episodeScore: 1 },
    { ...base, trajId: 'neg', trajGroupId: 'g', episodeScore: 0, inputIds: base.inputIds.map((id, k) => (base.responseMask[k] ? x : id)) },
  ];
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 5);
  const before = await sampledLogp(model, trajectories);
  const { scores } = await ppoUpdate({
    actor: trainee(model),
    klController: klControllerFromConfig(config),
    trajectories,
    config,
    step: 0,
    padId: tokenizer.padId,
  });
  const after = await sampledLogp(model, trajectories);
  const A = 0.5 / (Math.SQRT1_2 + 1e-6);
  assert.ok(Math.abs(scores.trajectories.pos.advantage! - A) < 1e-9 && Math.abs(scores.trajectories.neg.advantage! + A) < 1e-9);
  assert.ok(after[0] - before[0] > 0.02, `positive: ${before[0]} -> ${after[0]}`);
  assert.ok(after[1] - before[1] < -0.1, `negative: ${before[1]} -> ${after[1]}`);
  model.dispose();
});

test('the lr schedule counts optimizer steps: ppo_epochs x minibatches per epoch (ROLL)', () => {
  // 16 trajectories / (4 per micro-batch x 2 accumulation) = 2 minibatches per epoch; x 3 epochs = 6
  const config = fixtureConfig({
    ppo_epochs: 3,
    actor_train: { training_args: { per_device_train_batch_size: 4, gradient_accumulation_steps: 2 } },
  });
  assert.equal(optimizerStepsPerUpdate(config), 6);
});

test('gae: the critic trains from the policy; during critic_warmup the actor does not move', async () => {
  const config = fixtureConfig({ adv_estimator: 'gae', critic_warmup: 1, critic: { training_args: { learning_rate: 1e-3 } } });
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 6);
  const critic = ValueModel.fromPolicy(model);
  const before = snapshot(model);
  const head = () => Array.from((critic.trainableVariables().get('score.weight') as tf.Variable).dataSync());
  const { metrics } = await ppoUpdate({
    actor: trainee(model),
    critic: trainee(critic),
    klController: klControllerFromConfig(config),
    trajectories: batch(spread),
    config,
    step: 0,
    padId: tokenizer.padId,
  });
  assert.deepEqual(snapshot(model), before);
  assert.ok(
    head().some((x) => x !== 0),
    'the value head moved',
  );
  assert.equal(metrics['critic/optimizer_steps'], 1);
  // the value head starts at 0 and value_clip is off: the loss before the step is half the mean squared error
  assert.equal(metrics['critic/vpred'], 0);
  assert.ok(metrics['critic/loss'] > 0 && Math.abs(metrics['critic/loss'] - 0.5 * metrics['critic/error']) < 1e-7);
  assert.equal(metrics['actor/optimizer_steps'], 0);
  // step 1 >= critic_warmup: the actor trains too, ppo_epochs times; the critic makes one pass (ROLL's critic worker)
  const twoEpochs = fixtureConfig({
    adv_estimator: 'gae',
    critic_warmup: 1,
    ppo_epochs: 2,
    critic: { training_args: { learning_rate: 1e-3 } },
  });
  const r = await ppoUpdate({
    actor: trainee(model),
    critic: trainee(critic),
    klController: klControllerFromConfig(twoEpochs),
    trajectories: batch(spread),
    config: twoEpochs,
    step: 1,
    padId: tokenizer.padId,
  });
  assert.equal(r.metrics['actor/optimizer_steps'], 2);
  assert.equal(r.metrics['critic/optimizer_steps'], 1);
  assert.ok(r.metrics['critic/loss'] < metrics['critic/loss'], "one step lowered the critic's loss on the same batch");
  assert.equal(criticStepsPerUpdate(twoEpochs), 1);
  assert.notDeepEqual(snapshot(model), before);
  critic.dispose();
  model.dispose();
});

test("gae no-gradient pass: the critic's value at every position of a trajectory (prompt, observations, last token), 0 past its end", async () => {
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 6);
  const critic = ValueModel.fromPolicy(model);
  const head = critic.trainableVariables().get(VALUE_HEAD)!;
  head.assign(tf.randomNormal(head.shape, 0, 0.5, 'float32', 3));
  const trajectories = demos.slice(2, 5); // 205, 265 and 144 tokens
  // one slot past the longest trajectory's last token, as ppoUpdate sizes it: GAE reads each last token's value there
  const T = paddedLength(trajectories);
  const pre = await noGradPass({
    actor: model,
    critic,
    trajectories,
    T,
    padId: tokenizer.padId,
    microSize: 2,
    oldLogp: false,
    klPenalty: 'kl',
  });
  trajectories.forEach((t, i) => {
    const L = t.inputIds.length;
    const alone = tf.tidy(() => critic.values(tf.tensor2d([t.inputIds], [1, L], 'int32'), tf.ones([1, L]) as tf.Tensor2D).arraySync()[0]);
    pre.values![i].forEach((v, k) => {
      if (k < L) assert.ok(Math.abs(v - alone[k]) < 1e-5, `[${i}][${k}] ${v} vs ${alone[k]}`);
      else assert.equal(v, 0, `[${i}][${k}] past the end`);
    });
    assert.ok(Math.abs(pre.values![i][0]) > 1e-4 && Math.abs(pre.values![i][L - 1]) > 1e-4, 'the prompt and the last token carry values');
  });
  critic.dispose();
  model.dispose();
});

test('k3 KL loss against the reference: 0 while the policy equals it, > 0 after an epoch; epoch 2 ratio != 1', async () => {
  const config = fixtureConfig({ use_kl_loss: true, kl_loss_coef: 0.1, init_kl_coef: 0, ppo_epochs: 2 });
  assert.equal(needsReference(config), true);
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 7);
  const reference = Qwen2.fromNamedTensors(model.config, model.toNamedTensors());
  const lrSteps: number[] = [];
  const { metrics } = await ppoUpdate({
    actor: {
      ...trainee(model),
      lr: (k) => {
        lrSteps.push(k);
        return 1e-3;
      },
    },
    reference,
    klController: klControllerFromConfig(config),
    trajectories: batch(spread),
    config,
    step: 0,
    padId: tokenizer.padId,
  });
  assert.equal(metrics['actor/optimizer_steps'], 2);
  assert.deepEqual(lrSteps.slice(0, 2), [0, 1], 'the lr schedule advances per optimizer step');
  assert.ok(metrics['actor/kl_loss'] > 0, 'the mean over both epochs includes the moved second epoch');
  assert.ok(metrics['actor/ratio_max'] > 1 || metrics['actor/ratio_min'] < 1);
  assert.equal(metrics['critic/kl'], 0, 'old (= reference) vs reference KL before the update');
  reference.dispose();
  model.dispose();
});

test('gradient checkpointing on (the default) and off: the same update, metric for metric and weight for weight', async () => {
  const run = async (disable: boolean) => {
    const config = fixtureConfig({ ppo_epochs: 2, entropy_loss_coef: 0.01 });
    config.actor_train.model_args.disable_gradient_checkpointing = disable;
    const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 7);
    const { metrics } = await ppoUpdate({
      actor: trainee(model),
      klController: klControllerFromConfig(config),
      trajectories: batch(spread),
      config,
      step: 0,
      padId: tokenizer.padId,
    });
    const weights = [...model.trainableVariables().values()].map((v) => Array.from(v.dataSync()));
    model.dispose();
    return { metrics, weights };
  };
  const on = await run(false);
  const off = await run(true);
  for (const k of Object.keys(off.metrics).filter((k) => !k.startsWith('time/'))) assert.equal(on.metrics[k], off.metrics[k], k);
  assert.deepEqual(on.weights, off.weights);
});

test('the actor as its own reference (step 0, no second copy of the weights): the same update as a copy of it', async () => {
  const config = fixtureConfig({ use_kl_loss: true, kl_loss_coef: 0.1, add_token_level_kl: true, init_kl_coef: 0.05, ppo_epochs: 2 });
  const run = async (shared: boolean) => {
    const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 7);
    const copy = shared ? null : Qwen2.fromNamedTensors(model.config, model.toNamedTensors());
    const { metrics } = await ppoUpdate({
      actor: trainee(model),
      reference: copy ?? model,
      klController: klControllerFromConfig(config),
      trajectories: batch(spread),
      config,
      step: 0,
      padId: tokenizer.padId,
    });
    const weights = snapshot(model);
    copy?.dispose();
    model.dispose();
    return { metrics, weights };
  };
  const copied = await run(false);
  const shared = await run(true);
  for (const k of Object.keys(copied.metrics).filter((k) => !k.startsWith('time/'))) {
    assert.equal(shared.metrics[k], copied.metrics[k], k);
  }
  assert.deepEqual(shared.weights, copied.weights);
});

test('token-level KL penalty: beta * kl enters the rewards and the adaptive controller moves beta', async () => {
  const config = fixtureConfig({ add_token_level_kl: true, init_kl_coef: 0.2, target_kl: 0.001, kl_horizon: 100, kl_penalty: 'k3' });
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 8);
  const reference = Qwen2.random(tinyPreset(tokenizer.vocabSize), 9);
  const klController = klControllerFromConfig(config);
  const { metrics } = await ppoUpdate({
    actor: trainee(model),
    reference,
    klController,
    trajectories: batch(spread),
    config,
    step: 0,
    padId: tokenizer.padId,
  });
  const kl = metrics['critic/kl'];
  assert.ok(kl > 0);
  // critic/kl_coef is the beta these rewards used (ROLL compute_token_reward); then AdaptiveKLController:
  // err = clip(kl/target - 1, -0.2, 0.2) = 0.2 (kl >> target); beta = 0.2 * (1 + 0.2 * 16/100) for the next step
  assert.equal(metrics['critic/kl_coef'], 0.2);
  assert.ok(Math.abs(klController.value - 0.2 * (1 + (0.2 * 16) / 100)) < 1e-12);
  reference.dispose();
  model.dispose();
});

test('the "full" estimator sums the KL over the whole vocabulary in the no-gradient pass', async () => {
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 8);
  const reference = Qwen2.random(tinyPreset(tokenizer.vocabSize), 9);
  const kls: Record<string, number> = {};
  for (const kind of ['k3', 'full'] as const) {
    const config = fixtureConfig({ add_token_level_kl: true, init_kl_coef: 0.1, kl_penalty: kind });
    const copy = Qwen2.fromNamedTensors(model.config, model.toNamedTensors());
    const { metrics } = await ppoUpdate({
      actor: trainee(copy),
      reference,
      klController: klControllerFromConfig(config),
      trajectories: batch(spread),
      config,
      step: 0,
      padId: tokenizer.padId,
    });
    kls[kind] = metrics['critic/kl'];
    copy.dispose();
  }
  // Both estimate KL(old || ref) >= 0 on the same tokens; the exact sum over the vocabulary differs from the
  // single-sample k3 estimate but not wildly (two random inits: both small and positive).
  assert.ok(kls.full > 0 && kls.k3 > 0);
  assert.notEqual(kls.full, kls.k3);
  assert.ok(kls.full / kls.k3 > 0.2 && kls.full / kls.k3 < 5, `full ${kls.full} vs k3 ${kls.k3}`);
  reference.dispose();
  model.dispose();
});

test('StarPO-S filter: std keeps the top half of the groups; top_p skips a batch of flat groups', async () => {
  // group std: g0 flat (0), g1 0.5, g2 small, g3 large
  const scores = [0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0.1, 0, 2, 0, 2];
  const config = fixtureConfig({ rollout_filter_ratio: 0.5, rollout_filter_type: 'std' });
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 10);
  const trajectories = batch(scores);
  const { metrics, scores: stored } = await ppoUpdate({
    actor: trainee(model),
    klController: klControllerFromConfig(config),
    trajectories,
    config,
    step: 0,
    padId: tokenizer.padId,
  });
  assert.equal(metrics['rollout/kept_groups'], 2);
  assert.equal(metrics['rollout/kept_trajectories'], 8);
  assert.ok(metrics['rollout/chosen_in_group_std'] > metrics['rollout/in_group_std']);
  // what the update stores per trajectory: groups 1 and 3 kept; mean_std within the group: (s - mean) / std =
  // +-0.5 / 0.57735 (and +-1 / 1.1547) = +-0.866; reinforce, gamma 1, no whitening: every sampled token's advantage is it
  assert.equal(Object.keys(stored.trajectories).length, 16);
  trajectories.forEach((t, i) => {
    const s = stored.trajectories[t.trajId];
    const group = Math.floor(i / 4);
    assert.equal(s.kept, group === 1 || group === 3, t.trajId);
    if (!s.kept) return assert.deepEqual(s, { kept: false, normalizedScore: null, advantage: null });
    const expected = (scores[i] > 0 ? 1 : -1) * 0.8660254;
    assert.ok(Math.abs(s.normalizedScore! - expected) < 1e-5, `${t.trajId}: ${s.normalizedScore}`);
    assert.ok(Math.abs(s.advantage! - s.normalizedScore!) < 1e-6, `${t.trajId}: advantage ${s.advantage}`);
  });
  const flat = fixtureConfig({ rollout_filter_ratio: 0.9, rollout_filter_type: 'top_p' });
  const before = snapshot(model);
  const r = await ppoUpdate({
    actor: trainee(model),
    klController: klControllerFromConfig(flat),
    trajectories: batch(new Array(16).fill(1)),
    config: flat,
    step: 0,
    padId: tokenizer.padId,
  });
  assert.match(r.skipReason!, /zero/);
  assert.equal(r.scores.skipReason, r.skipReason);
  assert.ok(Object.values(r.scores.trajectories).every((s) => !s.kept && s.advantage === null));
  assert.equal(r.metrics['actor/update_skipped'], 1);
  assert.deepEqual(snapshot(model), before);
  model.dispose();
});

test('group keys follow reward_normalization.grouping', () => {
  const t: Trajectory = {
    trajGroupId: 'FrozenLake_3_0_77',
    trajId: 'FrozenLake_3_0_77_0',
    tag: 'T',
    groupId: 0,
    envId: 0,
    seed: 1,
    split: 'train',
    step: 0,
    inputIds: [1, 2],
    responseMask: [0, 1],
    sampleLogprobs: [0, -0.5],
    turns: [],
    episodeScore: 0,
    success: false,
    truncated: false,
  };
  assert.equal(groupKeyOf(t, 'batch'), 'batch');
  assert.equal(groupKeyOf(t, 'traj_group_id'), 'FrozenLake_3_0_77');
  assert.equal(groupKeyOf(t, 'tags'), 'T');
  assert.equal(groupKeyOf(t, 'seed'), '1');
  assert.throws(() => groupKeyOf(t, 'colour'), /grouping: "colour" is not a trajectory field/);
});
