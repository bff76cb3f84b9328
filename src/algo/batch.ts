/**
 * Packs trajectories into padded training tensors (SPEC.md §4 Packing, §6 notation): right padding
 * with the tokenizer's pad id, position ids from 0, and the SHIFTED response mask m[t] = 1 when token
 * t+1 was sampled by the policy (index t of the shifted arrays is the log-prob of token t+1).
 */
import * as tf from '@tensorflow/tfjs';
import type { Trajectory } from '../rollout/types';

/** A padded batch. */
export interface PackedBatch {
  /** int32 [B, L] token ids, right-padded with padId. */
  ids: tf.Tensor2D;
  /** float32 [B, L]: 1 on real tokens, 0 on padding. */
  attentionMask: tf.Tensor2D;
  /** [B][L-1] shifted response mask (0/1). */
  mask: number[][];
  /** [B] shifted index of each trajectory's last sampled token, -1 when it has none. */
  lastIndex: number[];
  /** [B][L-1] shifted sampling-time log-probs (nats), 0 off the mask. */
  sampleLogprobs: number[][];
}

/** The shifted arrays of a batch (no tensors), for code that needs only the masks. */
export type ShiftedArrays = Pick<PackedBatch, 'mask' | 'lastIndex' | 'sampleLogprobs'>;

/**
 * Shifted response mask, last sampled index and sampling log-probs, padded to length L-1.
 * @param L padded token length (>= every trajectory's length)
 */
export function shiftedArrays(trajectories: readonly Trajectory[], L: number): ShiftedArrays {
  const out: ShiftedArrays = { mask: [], lastIndex: [], sampleLogprobs: [] };
  for (const t of trajectories) {
    const m = new Array<number>(L - 1).fill(0);
    const lp = new Array<number>(L - 1).fill(0);
    let last = -1;
    for (let i = 1; i < t.inputIds.length; i++) {
      if (t.responseMask[i] === 1) {
        m[i - 1] = 1;
        lp[i - 1] = t.sampleLogprobs[i];
        last = i - 1;
      }
    }
    out.mask.push(m);
    out.lastIndex.push(last);
    out.sampleLogprobs.push(lp);
  }
  return out;
}

/** The padded length of a batch: max(2, longest trajectory) tokens. */
export function paddedLength(trajectories: readonly Trajectory[]): number {
  return Math.max(2, ...trajectories.map((t) => t.inputIds.length));
}

/**
 * Packs trajectories to a common length L = paddedLength. Caller disposes ids/attentionMask.
 * @throws RangeError when the list is empty
 */
export function packBatch(trajectories: readonly Trajectory[], padId: number): PackedBatch {
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
 * every micro-batch aggregates with its minibatch's denominators (minibatch_losses.ts).
 */
export function lengthBucketedMicroBatches(indices: readonly number[], lengths: readonly number[], size: number): number[][] {
  const sorted = [...indices].sort((a, b) => lengths[a] - lengths[b] || a - b);
  const out: number[][] = [];
  for (let i = 0; i < sorted.length; i += size) out.push(sorted.slice(i, i + size));
  return out;
}
