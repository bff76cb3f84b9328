/**
 * Batches packed trajectories for the update: right padding with the tokenizer's pad id into tensors,
 * the attention mask, the shifted arrays padded alike (rollout/packing.ts makes them), and
 * length-bucketed micro-batches.
 */
import * as tf from '@tensorflow/tfjs';
import { type PackedTokens, type ShiftedArrays, shiftedArrays } from '../rollout/packing';

/** A padded batch: tensors of the token ids and the attention mask, and the shifted arrays (packing.ts). */
export interface PackedBatch extends ShiftedArrays {
  /** int32 [B, L] token ids, right-padded with padId. */
  ids: tf.Tensor2D;
  /** float32 [B, L]: 1 on real tokens, 0 on padding. */
  attentionMask: tf.Tensor2D;
}

/** The padded length of a batch: max(2, longest trajectory) tokens. */
export function paddedLength(trajectories: readonly PackedTokens[]): number {
  return Math.max(2, ...trajectories.map((t) => t.inputIds.length));
}

/**
 * Packs trajectories to a common length L = paddedLength. Caller disposes ids/attentionMask.
 * @throws RangeError when the list is empty
 */
export function packBatch(trajectories: readonly PackedTokens[], padId: number): PackedBatch {
  if (trajectories.length === 0) throw new RangeError('packBatch: no trajectories');
  const B = trajectories.length;
  const L = paddedLength(trajectories);
  const ids = new Int32Array(B * L).fill(padId);
  const attention = new Float32Array(B * L);
  trajectories.forEach((t, b) => {
    ids.set(t.inputIds, b * L);
    attention.fill(1, b * L, b * L + t.inputIds.length);
  });
  return {
    ids: tf.tensor2d(ids, [B, L], 'int32'),
    attentionMask: tf.tensor2d(attention, [B, L], 'float32'),
    ...shiftedArrays(trajectories, L),
  };
}

/**
 * Splits indices into micro-batches of `size`, after sorting them by trajectory length so each
 * micro-batch pays for little padding (length bucketing). The loss does not depend on the split:
 * every micro-batch aggregates with its minibatch's denominators (update.ts).
 */
export function lengthBucketedMicroBatches(indices: readonly number[], lengths: readonly number[], size: number): number[][] {
  const sorted = [...indices].sort((a, b) => lengths[a] - lengths[b] || a - b);
  const out: number[][] = [];
  for (let i = 0; i < sorted.length; i += size) out.push(sorted.slice(i, i + size));
  return out;
}
