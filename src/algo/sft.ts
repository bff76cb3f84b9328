/**
 * Supervised fine-tuning on demonstration trajectories: token-mean negative log-likelihood of the
 * response tokens (the same mask the RL loss uses). Used by the warm-up (format and solver demonstrations).
 */
import * as tf from '@tensorflow/tfjs';
import type { RunConfig, Trajectory } from '../contract';
import { tokenLogProbs } from '../model/logprobs';
import type { Qwen2 } from '../model/qwen2';
import { Rng } from '../util/rng';
import type { AdamW } from './adamw';
import { type MicroBatchLoss, optimizerStep } from './grad_step';
import { type LrSchedule, lrAt } from './lr_schedule';
import { microBatchLosses } from './micro_batches';

/** Settings of an SFT run. */
export interface SftOptions {
  model: Qwen2;
  optimizer: AdamW;
  trajectories: Trajectory[];
  /** Optimizer steps. */
  steps: number;
  /** Trajectories per optimizer step. */
  batchSize: number;
  /** Trajectories per micro-batch (memory bound). */
  microBatchSize: number;
  /** Recompute each decoder layer in the backward (the update's setting; same numbers, less memory). */
  gradientCheckpointing: boolean;
  lr: LrSchedule;
  maxGradNorm: number;
  seed: number;
  padId: number;
  /** Called after each optimizer step with (step, loss in nats/token). */
  afterStep?: (step: number, loss: number) => Promise<void>;
}

/**
 * Trains for `steps` optimizer steps on minibatches drawn without replacement (reshuffled every
 * epoch, seeded). Returns the mean loss of the last 10 steps (nats per response token).
 * @throws RangeError when there are no trajectories
 */
export async function sftTrain(o: SftOptions): Promise<{ finalLoss: number; losses: number[] }> {
  if (o.trajectories.length === 0) throw new RangeError('sftTrain: no trajectories');
  const vars = o.model.trainableVariables();
  const losses: number[] = [];
  let order: number[] = [];
  let epoch = 0;
  for (let step = 0; step < o.steps; step++) {
    if (order.length < o.batchSize) order = order.concat(new Rng(o.seed, 'sft', epoch++).shuffle([...o.trajectories.keys()]));
    const picked = order.splice(0, o.batchSize);
    // Each micro-batch's token mean, divided by their number: the minibatch's loss is their mean.
    const lossFns: MicroBatchLoss[] = microBatchLosses(o, picked, o.microBatchSize, ({ ids, attentionMask, mask }) => {
      const { logp, entropy } = tokenLogProbs(o.model, ids, attentionMask, {
        at: mask,
        entropyGradient: false,
        gradientCheckpointing: o.gradientCheckpointing,
      });
      entropy.dispose();
      const nll = tf.div(tf.neg(tf.sum(tf.mul(logp, mask))), tf.maximum(tf.sum(mask), 1));
      return tf.div(nll, lossFns.length) as tf.Scalar;
    });
    const res = await optimizerStep({ vars, optimizer: o.optimizer, lossFns, lr: lrAt(o.lr, step), maxGradNorm: o.maxGradNorm });
    losses.push(res.loss);
    if (o.afterStep) await o.afterStep(step, res.loss);
  }
  const tail = losses.slice(-10);
  return { finalLoss: tail.reduce((a, b) => a + b, 0) / tail.length, losses };
}

/** The warm-up's learning-rate schedule: warmup.learning_rate under warmup.lr_scheduler_type over its train_steps. */
export function warmupSchedule(w: RunConfig['warmup']): LrSchedule {
  return { base: w.learning_rate, type: w.lr_scheduler_type, warmupSteps: 0, totalSteps: w.train_steps };
}
