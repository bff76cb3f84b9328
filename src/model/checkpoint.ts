/**
 * Gradient checkpointing (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"; what HF's
 * `gradient_checkpointing_enable` does per decoder layer): a chain of stages runs forward without keeping its
 * intermediates for the backward pass, only each stage's input; the backward pass runs each stage's forward again,
 * under a tape of its own, and backpropagates through it, last stage first.
 *
 * tfjs has no checkpoint primitive, so the chain is one `tf.customGrad` op. Its forward runs inside a kernel, where
 * the engine records nothing on the tape. Its inputs are the chain's input AND every weight of every stage: a
 * customGrad returns gradients only for its inputs, and a variable the forward reads from a closure would get none.
 */
import * as tf from '@tensorflow/tfjs';

/** One stage of a checkpointed chain (a decoder layer). */
export interface CheckpointStage {
  /**
   * The stage's forward: x float32 [N, E] -> [N, E], reading `context` (tensors every stage reads, e.g. RoPE tables
   * and the attention mask: the backward pass hands it the copies it kept, the originals being freed by then).
   * Deterministic, and reading no trainable tensor outside `weights`.
   */
  run(x: tf.Tensor2D, context: tf.Tensor[]): tf.Tensor2D;
  /** Every trainable tensor `run` reads (the weights of a layer): their gradients come out of the chain. */
  weights: tf.Tensor[];
}

/**
 * The stages applied in order to x, differentiable w.r.t. x and every stage's weights, with only the stages'
 * inputs and `context` kept for the backward pass (the engine frees them when the backward pass ends). Without a
 * gradient tape this is the plain forward: nothing is kept.
 * @param x float32 [N, E]; @param context tensors the stages read besides x and their weights (not differentiated)
 * @returns float32 [N, E], the last stage's output
 */
export function checkpointedStages(x: tf.Tensor2D, stages: readonly CheckpointStage[], context: tf.Tensor[]): tf.Tensor2D {
  const n = stages.length;
  if (n === 0) return x;
  const f = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const save = args[args.length - 1] as tf.GradSaveFunc;
    const inputs: tf.Tensor2D[] = [args[0] as tf.Tensor2D];
    for (let i = 0; i < n; i++) {
      const input = inputs[i];
      // A scope per stage frees its intermediates as soon as it is done.
      inputs.push(tf.tidy(() => stages[i].run(input, context)));
    }
    const value = inputs.pop() as tf.Tensor2D;
    save([...inputs, ...context]);
    const gradFunc = (dy: tf.Tensor2D, saved: tf.Tensor[]): tf.Tensor[] => {
      const keptInputs = saved.slice(0, n) as tf.Tensor2D[];
      const keptContext = saved.slice(n);
      const weightGrads: tf.Tensor[][] = new Array(n);
      let d = dy;
      for (let i = n - 1; i >= 0; i--) {
        const stage = stages[i];
        const grads = gradsOnOwnTape((input) => stage.run(input as tf.Tensor2D, keptContext), [keptInputs[i], ...stage.weights], d);
        // A kept input is done with once its stage is recomputed: freed now rather than when the whole backward ends
        // (the engine's own dispose of it later is a no-op).
        keptInputs[i].dispose();
        if (d !== dy) d.dispose();
        d = grads[0] as tf.Tensor2D;
        weightGrads[i] = grads.slice(1);
      }
      tf.dispose(keptContext);
      return [d, ...weightGrads.flat()];
    };
    return { value, gradFunc };
  });
  return f(x, ...stages.flatMap((s) => s.weights)) as tf.Tensor2D;
}

/**
 * tf.grads of f at xs with upstream gradient dy, called while the engine backpropagates another gradient.
 * tfjs supports nested gradients only inside a forward pass: one started during a backward pass replaces the
 * engine's tape (the outer pass still needs it to free the tensors it saved) and leaves it null when done. The
 * outer tape is put back afterwards; the inner pass frees its own saved tensors itself.
 */
function gradsOnOwnTape(f: (...xs: tf.Tensor[]) => tf.Tensor, xs: tf.Tensor[], dy: tf.Tensor): tf.Tensor[] {
  const state = tf.engine().state;
  const outer = state.activeTape;
  try {
    return tf.grads(f)(xs, dy);
  } finally {
    state.activeTape = outer;
  }
}
