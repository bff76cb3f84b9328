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
  /** Wall seconds: building the losses (forward), their gradients (backward), clipping + AdamW (optimizer). */
  seconds: { forward: number; backward: number; optimizer: number };
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
  const seconds = { forward: 0, backward: 0, optimizer: 0 };
  for (const fn of opts.lossFns) {
    // tfjs CPU backends run synchronously, so wall time splits cleanly into the loss and the gradient.
    const t0 = performance.now();
    let forwardMs = 0;
    const { value, grads } = tf.variableGrads(() => {
      const f0 = performance.now();
      const out = fn();
      forwardMs = performance.now() - f0;
      return out;
    }, varList);
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
    if (opts.afterMicroBatch) await opts.afterMicroBatch();
  }
  const t0 = performance.now();
  const { grads, norm } = clipByGlobalNorm(acc, opts.maxGradNorm);
  const applied = Number.isFinite(loss) && Number.isFinite(norm);
  if (applied) opts.optimizer.applyGradients(grads, opts.lr, opts.vars);
  for (const g of acc.values()) g.dispose();
  for (const g of grads.values()) if (!g.isDisposed) g.dispose();
  seconds.optimizer = (performance.now() - t0) / 1000;
  return { loss, gradNorm: norm, applied, seconds };
}
