/**
 * The loss and its gradient do not depend on per_device_train_batch_size (docs/numerics.md §6; ROLL gives every micro-batch the
 * minibatch's denominators): the actor's and the critic's micro-batch loss builders (update.ts actorLossFns / criticLossFns,
 * what ppoUpdate steps with), summed by accumulateGradients, give the loss of the whole minibatch at once to 1e-6 and its
 * gradient to GRAD_TOL for micro-batches of 1, 3 and 4, in every loss_agg_mode; and a whole ppoUpdate logs the same losses and gradient norm for
 * per_device_train_batch_size x gradient_accumulation_steps = 16 x 1, 4 x 4 and 1 x 16.
 */

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { AdamW } from '../../../src/algo/adamw';
import { paddedLength } from '../../../src/algo/batch';
import { accumulateGradients, type MicroBatchLoss } from '../../../src/algo/grad_step';
import { klControllerFromConfig } from '../../../src/algo/kl';
import { StatAccumulator } from '../../../src/algo/loss';
import { noGradPass, type UpdateRows } from '../../../src/algo/micro_batches';
import { actorLossFns, criticLossFns, ppoUpdate } from '../../../src/algo/update';
import type { Trajectory } from '../../../src/contract';
import { LOSS_AGG_MODES } from '../../../src/contract';
import { tinyPreset } from '../../../src/model/config';
import { Qwen2 } from '../../../src/model/qwen2';
import { charTokenizer } from '../../../src/model/tokenizer';
import { VALUE_HEAD, ValueModel } from '../../../src/model/value_model';
import { shiftedArrays } from '../../../src/rollout/packing';
import { initTestBackend } from '../../helpers/backend';
import { fixtureConfig, fixtureDemos } from '../../helpers/fixture';

const tokenizer = charTokenizer();
const TOL = 1e-6;
/**
 * Gradients, relative to the largest entry: 32 float32 ulps. The micro-batches sum the same float32 terms in
 * another order, and oneDNN's blocked kernels (native backend, AVX-512 hosts) reorder the reductions inside
 * each matmul too; a wrong denominator would be off by whole percents.
 */
const GRAD_TOL = 32 * 2 ** -23;
let trajectories: Trajectory[] = [];

before(async () => {
  await initTestBackend();
  // cut to 128..212 tokens (a 122-token prompt, then 6 to 90 tokens of turns), plus one trajectory without a sampled
  // token (a row no seq-mean denominator counts)
  const demos = (await fixtureDemos(8)).map((t, i) => {
    const n = 128 + 12 * i;
    return {
      ...t,
      inputIds: t.inputIds.slice(0, n),
      responseMask: t.responseMask.slice(0, n),
      sampleLogprobs: t.sampleLogprobs.slice(0, n),
    };
  });
  trajectories = [...demos, { ...demos[4], trajId: 'empty', responseMask: demos[4].responseMask.map(() => 0) }];
});

/** The update's rows: real old / reference log-probs and values from the prepass, moved off ratio 1 so the clips act. */
async function updateRows(actor: Qwen2, reference: Qwen2, critic: ValueModel): Promise<UpdateRows> {
  const T = paddedLength(trajectories);
  const { mask } = shiftedArrays(trajectories, T + 1);
  const pre = await noGradPass({
    actor,
    reference,
    critic,
    trajectories,
    T,
    padId: tokenizer.padId,
    microSize: 4,
    oldLogp: true,
    klPenalty: 'k3',
  });
  const wave = (f: (x: number) => number, a: number) => mask.map((row, i) => row.map((m, t) => m * a * f(i * 7 + t * 0.3)));
  const offset = wave(Math.sin, 0.3);
  const advantages = wave(Math.cos, 1.5);
  return {
    trajectories,
    padId: tokenizer.padId,
    mask,
    advantages,
    refLogp: pre.refLogp,
    oldLogp: pre.oldLogp!.map((row, i) => row.map((x, t) => x + offset[i][t])),
    values: pre.values,
    returns: pre.values!.map((row, i) => row.map((v, t) => v + advantages[i][t])),
  };
}

/** Loss and gradients of the micro-batch builders; the caller disposes nothing (arrays are returned). */
async function lossAndGrads(
  vars: Map<string, tf.Variable>,
  fns: MicroBatchLoss[],
): Promise<{ loss: number; grads: Map<string, Float32Array> }> {
  const { grads, loss } = await accumulateGradients(vars, fns);
  const out = new Map([...grads].map(([k, g]) => [k, g.dataSync() as Float32Array]));
  grads.forEach((g) => g.dispose());
  return { loss, grads: out };
}

/**
 * Equal to 1e-6 of the quantity's scale (at least 1): float32 sums over thousands of tokens in another order differ in
 * their last bits, and seq-mean-token-sum's loss and gradients are token sums, of order 1 to 10.
 */
function assertSame(a: { loss: number; grads: Map<string, Float32Array> }, b: typeof a, what: string): void {
  assert.ok(Math.abs(a.loss - b.loss) <= TOL * Math.max(1, Math.abs(b.loss)), `${what}: loss ${a.loss} vs ${b.loss}`);
  assert.deepEqual([...a.grads.keys()], [...b.grads.keys()]);
  let worst = 0;
  let scale = 1;
  for (const [name, g] of b.grads) {
    const h = a.grads.get(name)!;
    g.forEach((x, i) => {
      worst = Math.max(worst, Math.abs(x - h[i]));
      scale = Math.max(scale, Math.abs(x));
    });
  }
  assert.ok(worst <= GRAD_TOL * scale, `${what}: gradients differ by up to ${worst} (largest |gradient| ${scale})`);
}

test('actor and critic: the same loss and gradient for micro-batches of 1, 3, 4 and the whole minibatch, every loss_agg_mode', async () => {
  const actor = Qwen2.random(tinyPreset(tokenizer.vocabSize), 21);
  const reference = Qwen2.random(tinyPreset(tokenizer.vocabSize), 22);
  const critic = ValueModel.fromPolicy(actor);
  // a non-zero value head (fromPolicy starts it at 0), so values and the trunk's gradients are not 0
  const head = critic.trainableVariables().get(VALUE_HEAD)!;
  head.assign(tf.randomNormal(head.shape, 0, 0.5, 'float32', 24));
  const rows = await updateRows(actor, reference, critic);
  const minibatch = [...trajectories.keys()];
  for (const mode of LOSS_AGG_MODES) {
    const config = fixtureConfig({
      loss_agg_mode: mode,
      use_kl_loss: true,
      kl_loss_coef: 0.1,
      entropy_loss_coef: 0.01,
      dual_clip_loss: true,
    });
    const stats = new StatAccumulator();
    const whole = await lossAndGrads(actor.trainableVariables(), actorLossFns(actor, rows, minibatch, minibatch.length, config, stats, 0));
    const clipped = stats.result(1)['actor/ppo_ratio_clipfrac'];
    assert.ok(clipped > 0.1 && clipped < 0.9, `${mode}: the clip acts on some tokens (${clipped})`);
    for (const micro of [1, 3, 4]) {
      assertSame(
        await lossAndGrads(actor.trainableVariables(), actorLossFns(actor, rows, minibatch, micro, config, new StatAccumulator(), 0)),
        whole,
        `actor ${mode} micro ${micro}`,
      );
    }
  }
  const config = fixtureConfig({ value_clip: 0.2 });
  const whole = await lossAndGrads(
    critic.trainableVariables(),
    criticLossFns(critic, rows, minibatch, minibatch.length, config, new StatAccumulator()),
  );
  for (const micro of [1, 3, 4]) {
    assertSame(
      await lossAndGrads(critic.trainableVariables(), criticLossFns(critic, rows, minibatch, micro, config, new StatAccumulator())),
      whole,
      `critic micro ${micro}`,
    );
  }
  critic.dispose();
  reference.dispose();
  actor.dispose();
});

test('ppoUpdate logs the same losses and gradient norm whatever per_device_train_batch_size is, every loss_agg_mode', async () => {
  const demos = await fixtureDemos(16);
  const batch = demos.map((t, i) => ({ ...t, trajGroupId: `FrozenLake_${Math.floor(i / 4)}_0_1`, episodeScore: (i % 4) * 0.25 }));
  for (const mode of LOSS_AGG_MODES) {
    const runs: Record<string, number>[] = [];
    for (const [perDevice, accumulation] of [
      [16, 1],
      [4, 4],
      [1, 16],
    ]) {
      const config = fixtureConfig({
        loss_agg_mode: mode,
        entropy_loss_coef: 0.01,
        actor_train: { training_args: { per_device_train_batch_size: perDevice, gradient_accumulation_steps: accumulation } },
      });
      const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), 23);
      const { metrics } = await ppoUpdate({
        actor: { model, optimizer: new AdamW({}), lr: () => 1e-3 },
        klController: klControllerFromConfig(config),
        trajectories: batch,
        config,
        step: 0,
        padId: tokenizer.padId,
      });
      runs.push(metrics);
      model.dispose();
    }
    for (const key of ['actor/pg_loss', 'actor/total_loss', 'actor/entropy', 'actor/grad_norm', 'actor/ratio_mean', 'actor/clipfrac']) {
      for (const m of runs.slice(1)) {
        assert.ok(
          Math.abs(m[key] - runs[0][key]) <= TOL * Math.max(1, Math.abs(runs[0][key])),
          `${mode} ${key}: ${m[key]} vs ${runs[0][key]}`,
        );
      }
    }
    assert.ok(runs[0]['actor/grad_norm'] > 0);
  }
});
