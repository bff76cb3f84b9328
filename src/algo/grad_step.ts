/**
 * One optimizer step with gradient accumulation over micro-batches, global grad-norm clipping and a
 * guard against non-finite values (a non-finite loss or gradient norm skips the step and is
 * logged, never applied to the weights). Yields between micro-batches so the activity's
 * heartbeats go out.
 */
import * as tf from '@tensorflow/tfjs';
import { atShape } from '../model/out_of_memory';
import { type AdamW, clipByGlobalNorm } from './adamw';

/** One micro-batch's share of a minibatch loss: `rows` sequences padded to `tokens`, and the function building it. */
export interface MicroBatchLoss {
  rows: number;
  tokens: number;
  loss: () => tf.Scalar;
}

/** Result of one optimizer step. */
export interface StepResult {
  /** Sum over micro-batches of their shares: the minibatch loss. */
  loss: number;
  /** Global L2 norm of the accumulated gradient before clipping. */
  gradNorm: number;
  /** false when the loss or the gradient norm was not finite (weights untouched). */
  applied: boolean;
  /** Wall seconds: building the losses (forward), their gradients (backward), clipping + AdamW (optimizer). */
  seconds: { forward: number; backward: number; optimizer: number };
}

/** Summed gradients (keyed by HF weight name) and loss of a list of micro-batch losses. Caller disposes the grads. */
export interface AccumulatedGradients {
  grads: Map<string, tf.Tensor>;
  loss: number;
  seconds: { forward: number; backward: number };
}

/**
 * Sums the gradients and values of `lossFns` (each builds one micro-batch's share of the minibatch loss, so the sums
 * are the minibatch's loss and gradient). The sums stay on the backend: each micro-batch's gradient is added into the
 * accumulator of its weight and freed at once, weight by weight. tfjs has no kernel that writes into its input, so
 * an addition makes the new sum and frees the old one: one weight-sized temporary at a time, and no gradient of an
 * earlier micro-batch is kept. Only the scalar losses are read to the host. A backend running out of memory in one
 * throws BackendOutOfMemoryError naming its shape.
 * @param vars trainable variables keyed by HF weight name
 * @param afterMicroBatch awaited after each micro-batch (heartbeat / event-loop yield)
 */
export async function accumulateGradients(
  vars: Map<string, tf.Variable>,
  lossFns: MicroBatchLoss[],
  afterMicroBatch?: () => Promise<void>,
): Promise<AccumulatedGradients> {
  const names = [...vars.keys()];
  const varList = names.map((n) => vars.get(n) as tf.Variable);
  const byTfName = new Map(varList.map((v, i) => [v.name, names[i]]));
  const acc = new Map<string, tf.Tensor>();
  let loss = 0;
  const seconds = { forward: 0, backward: 0 };
  try {
    for (const fn of lossFns) {
      // tfjs CPU backends run synchronously, so wall time splits cleanly into the loss and the gradient.
      const t0 = performance.now();
      let forwardMs = 0;
      const { value, grads } = atShape({ kind: 'micro-batch', rows: fn.rows, tokens: fn.tokens }, () =>
        tf.variableGrads(() => {
          const f0 = performance.now();
          const out = fn.loss();
          forwardMs = performance.now() - f0;
          return out;
        }, varList),
      );
      seconds.forward += forwardMs / 1000;
      seconds.backward += (performance.now() - t0 - forwardMs) / 1000;
      loss += (await value.data())[0];
      value.dispose();
      for (const [tfName, g] of Object.entries(grads)) {
        const name = byTfName.get(tfName) as string;
        const prev = acc.get(name);
        if (prev) {
          acc.set(name, tf.add(prev, g));
          prev.dispose();
          g.dispose();
        } else acc.set(name, g);
      }
      if (afterMicroBatch) await afterMicroBatch();
    }
  } catch (err) {
    tf.dispose([...acc.values()]);
    throw err;
  }
  return { grads: acc, loss, seconds };
}

/**
 * One optimizer step: accumulateGradients over the micro-batches' shares of the minibatch loss, clipping to
 * `maxGradNorm` and AdamW at `lr`, all on the backend that holds the weights; the loss and the gradient norm are
 * the only values read back. AdamW frees each summed gradient as soon as its weight is updated.
 * @param vars trainable variables keyed by HF weight name
 * @param afterMicroBatch awaited after each micro-batch (heartbeat / event-loop yield)
 */
export async function optimizerStep(opts: {
  vars: Map<string, tf.Variable>;
  optimizer: AdamW;
  lossFns: MicroBatchLoss[];
  lr: number;
  maxGradNorm: number;
  afterMicroBatch?: () => Promise<void>;
}): Promise<StepResult> {
  const { grads, loss, seconds } = await accumulateGradients(opts.vars, opts.lossFns, opts.afterMicroBatch);
  const t0 = performance.now();
  try {
    const { norm, scale } = clipByGlobalNorm(grads, opts.maxGradNorm);
    const applied = Number.isFinite(loss) && Number.isFinite(norm);
    if (applied) opts.optimizer.applyGradients(grads, opts.lr, opts.vars, scale, true);
    return { loss, gradNorm: norm, applied, seconds: { ...seconds, optimizer: (performance.now() - t0) / 1000 } };
  } finally {
    tf.dispose([...grads.values()]); // those AdamW did not free (a skipped step, an error)
  }
}
