/**
 * The critic of adv_estimator `gae` (docs/numerics.md §5.3, §7): a Qwen2 trunk with a scalar value head, as ROLL's critic
 * role builds it (AutoModelForTokenClassification, num_labels = 1: HF names the head `score.weight`, [1, E], no
 * bias). ROLL starts the critic from the policy's weights; so do we (`fromPolicy`), with a zero value head so the
 * first values are 0 and deterministic.
 */
import * as tf from '@tensorflow/tfjs';
import type { StreamedObject } from '../contract';
import type { Qwen2Config } from './config';
import { decodeSafetensors, streamedBytes, toFloat32 } from './hf/safetensors';
import { tensorsSafetensors } from './hf/weights';
import { Qwen2 } from './qwen2';

/** HF name of the value head weight. */
export const VALUE_HEAD = 'score.weight';

/** A value model: V(s_t) for every position t of a sequence. */
export class ValueModel {
  private constructor(
    readonly trunk: Qwen2,
    private readonly head: tf.Variable,
  ) {}

  /**
   * A critic initialised from a policy's weights (copied) with a zero head.
   * @param policy the policy whose trunk weights are copied (not modified, not owned)
   */
  static fromPolicy(policy: Qwen2): ValueModel {
    const trunk = Qwen2.fromNamedTensors(policy.config, policy.toNamedTensors());
    const head = tf.tidy(() => tf.variable(tf.zeros([1, policy.config.hidden_size]), true, `${VALUE_HEAD}#${uniqueSuffix()}`));
    return new ValueModel(trunk, head);
  }

  /**
   * Values of every position. Differentiable w.r.t. trunk and head.
   * @param ids int32 [B, L] right-padded; @param attentionMask [B, L] 1 real / 0 pad
   * @returns float32 [B, L]: index t is V of the state after token t (the caller shifts and masks)
   * @throws RangeError from Qwen2.hiddenStates (shapes, sequence too long)
   */
  values(ids: tf.Tensor2D, attentionMask: tf.Tensor2D): tf.Tensor2D {
    const hidden = this.trunk.hiddenStates(ids, attentionMask);
    try {
      const [B, L, E] = hidden.shape;
      // A 2-D matmul: tfjs's gradient of a broadcast 3-D x 2-D matMul has the wrong shape.
      return tf.tidy(() => tf.reshape(tf.matMul(tf.reshape(hidden, [B * L, E]), this.head, false, true), [B, L]) as tf.Tensor2D);
    } finally {
      hidden.dispose();
    }
  }

  /** Trainable variables by HF name: the trunk's model.* weights and score.weight. */
  trainableVariables(): Map<string, tf.Variable> {
    return new Map([...this.trunk.trainableVariables(), [VALUE_HEAD, this.head]]);
  }

  /** Trunk and head as F32 safetensors with HF names (critic.safetensors), streamed off the device. */
  safetensors(): StreamedObject {
    return tensorsSafetensors(this.trainableVariables());
  }

  /** safetensors()'s bytes in one buffer. */
  async toSafetensors(): Promise<Uint8Array> {
    return streamedBytes(this.safetensors());
  }

  /**
   * Loads a critic written by toSafetensors.
   * @param config the trunk's Qwen2 config (the policy's config.json)
   * @throws Error naming a missing weight or a wrong head shape
   */
  static fromSafetensors(config: Qwen2Config, bytes: Uint8Array): ValueModel {
    const { tensors } = decodeSafetensors(bytes);
    const uploaded = new Map(Object.entries(tensors).map(([name, t]) => [name, tf.tensor(toFloat32(t), t.shape, 'float32')]));
    try {
      return ValueModel.fromTensors(config, uploaded);
    } finally {
      tf.dispose([...uploaded.values()]);
    }
  }

  /**
   * Loads a critic from critic.safetensors's tensors on the backend (the critic's variables share their data; the
   * caller still owns and disposes the given tensors).
   * @throws Error naming a missing weight or a wrong head shape
   */
  static fromTensors(config: Qwen2Config, tensors: Map<string, tf.Tensor>): ValueModel {
    const head = tensors.get(VALUE_HEAD);
    if (!head) throw new Error(`ValueModel.fromSafetensors: weight ${VALUE_HEAD} is missing`);
    if (head.shape.length !== 2 || head.shape[0] !== 1 || head.shape[1] !== config.hidden_size) {
      throw new Error(`ValueModel.fromSafetensors: ${VALUE_HEAD} has shape [${head.shape}], expected [1, ${config.hidden_size}]`);
    }
    const trunk = Qwen2.fromNamedTensors(config, tensors);
    const headVar = tf.tidy(() => tf.variable(tf.cast(head, 'float32'), true, `${VALUE_HEAD}#${uniqueSuffix()}`));
    return new ValueModel(trunk, headVar);
  }

  /** Frees the trunk and the head. */
  dispose(): void {
    this.trunk.dispose();
    this.head.dispose();
  }
}

let counter = 0;
function uniqueSuffix(): number {
  return ++counter;
}
