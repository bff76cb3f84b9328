/**
 * One optimizer step with gradient accumulation over micro-batches, global grad-norm clipping and a
 * guard against non-finite values (issue 2, item 7: a non-finite loss or gradient norm skips the
 * step and is logged, never applied to the weights). Yields between micro-batches so the activity's
 * heartbeats go out (DESIGN.md, Workers and compute).
 */
import * as tf from '@tensorflow/tfjs';
import { AdamW, clipByGlobalNorm } from './adamw';

/** Result of one optimizer step. */
export interface StepResult {
  /** Sum over micro-batches of the returned (already scaled) losses. */
  loss: number;
  /** Global L2 norm of the accumulated gradient before clipping. */
  gradNorm: number;
  /** false when the loss or the gradient norm was not finite (weights untouched). */
  applied: boolean;
}

/**
 * Accumulates the gradients of `lossFns` (each builds one micro-batch's scalar loss, already divided
 * by the number of micro-batches), clips them to `maxGradNorm` and applies AdamW at `lr`.
 * @param vars trainable variables keyed by HF weight name
 * @param afterMicroBatch awaited after each micro-batch (heartbeat / event-loop yield)
 */
export async function optimizerStep(opts: {
  vars: Map<string, tf.Variable>;
  optimizer: AdamW;
  lossFns: Array<() => tf.Scalar>;
  lr: number;
  maxGradNorm: number;
  afterMicroBatch?: () => Promise<void>;
}): Promise<StepResult> {
  const names = [...opts.vars.keys()];
  const varList = names.map((n) => opts.vars.get(n) as tf.Variable);
  const byTfName = new Map(varList.map((v, i) => [v.name, names[i]]));
  const acc = new Map<string, tf.Tensor>();
  let loss = 0;
  for (const fn of opts.lossFns) {
    const { value, grads } = tf.variableGrads(fn, varList);
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
    if (opts.afterMicroBatch) await opts.afterMicroBatch();
  }
  const { grads, norm } = clipByGlobalNorm(acc, opts.maxGradNorm);
  const applied = Number.isFinite(loss) && Number.isFinite(norm);
  if (applied) opts.optimizer.applyGradients(grads, opts.lr, opts.vars);
  for (const g of acc.values()) g.dispose();
  for (const g of grads.values()) if (!g.isDisposed) g.dispose();
  return { loss, gradNorm: norm, applied };
}
