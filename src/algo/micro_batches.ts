/**
 * The model over a batch's trajectories, one length-bucketed micro-batch of per_device_train_batch_size at a
 * time: the no-gradient pass before an update (old and reference log-probs, the token KL, the critic's values;
 * docs/numerics.md §5.2-5.3, §6) and the packing behind the loss builders of a minibatch (update.ts).
 */
import * as tf from '@tensorflow/tfjs';
import type { Trajectory } from '../contract';
import { tokenLogProbs } from '../model/logprobs';
import { atShape } from '../model/out_of_memory';
import type { Qwen2 } from '../model/qwen2';
import type { ValueModel } from '../model/value_model';
import { lengthBucketedMicroBatches, packBatch, paddedLength } from './batch';
import type { MicroBatchLoss } from './grad_step';
import { type KlPenalty, klFull, klPenalty } from './kl';

/** What the no-gradient pass computes. All arrays are [B][T] shifted (T >= padded batch length - 1); see each for its zeros. */
export interface NoGradPassOutput {
  /** log pi_old(token t+1), nats, when `oldLogp` was asked (or a KL needs it). */
  oldLogp: number[][] | null;
  /** log pi_ref(token t+1), nats, when a reference model was given. */
  refLogp: number[][] | null;
  /** kl_penalty estimate of KL(old || ref) per token, nats, when a reference model was given. */
  tokenKl: number[][] | null;
  /**
   * V(state after token t) from the critic, when a critic was given: at EVERY position of the trajectory (prompt and
   * observation tokens too, and its last token), as ROLL's GAE reads them; 0 past the trajectory's end.
   */
  values: number[][] | null;
}

/** Copies rows of a [b, Tm] tensor into full-length [T] rows at the given batch indices, times the mask. */
function scatterRows(out: number[][], idx: readonly number[], t: tf.Tensor2D, mask: readonly (readonly number[])[]): void {
  const rows = t.arraySync();
  idx.forEach((i, r) =>
    rows[r].forEach((v, k) => {
      out[i][k] = v * mask[r][k];
    }),
  );
}

/** Copies the first lengths[i] entries of rows of a [b, Lm] tensor into full-length [T] rows (no mask). */
function scatterPrefixes(out: number[][], idx: readonly number[], t: tf.Tensor2D, lengths: readonly number[]): void {
  const rows = t.arraySync();
  idx.forEach((i, r) => {
    for (let k = 0; k < Math.min(lengths[i], out[i].length); k++) out[i][k] = rows[r][k];
  });
}

/**
 * The no-gradient pass (ROLL agentic pipeline: compute_log_probs of the actor and the reference, the critic's
 * compute_values), each part only when asked for. The old log-probs of stale trajectories are not computed here:
 * the update takes their sampling log-probs (staleness.ts oldLogpRows).
 * @param T shifted length of the whole batch (>= paddedLength - 1)
 * @param oldLogp compute old log-probs even without a reference (the ratio can move off 1 during the update)
 * @param reference frozen reference policy (possibly the actor itself, when their weights are the same); with it
 *   refLogp and tokenKl are computed
 * @param critic value model; with it values are computed
 * @param afterMicroBatch awaited between micro-batches (heartbeats)
 */
export async function noGradPass(opts: {
  actor: Qwen2;
  reference?: Qwen2 | null;
  critic?: ValueModel | null;
  trajectories: readonly Trajectory[];
  T: number;
  padId: number;
  microSize: number;
  oldLogp: boolean;
  klPenalty: KlPenalty;
  afterMicroBatch?: () => Promise<void>;
}): Promise<NoGradPassOutput> {
  const B = opts.trajectories.length;
  const blank = () => Array.from({ length: B }, () => new Array<number>(opts.T).fill(0));
  const wantOld = opts.oldLogp || !!opts.reference;
  const out: NoGradPassOutput = {
    oldLogp: wantOld ? blank() : null,
    refLogp: opts.reference ? blank() : null,
    tokenKl: opts.reference ? blank() : null,
    values: opts.critic ? blank() : null,
  };
  const lengths = opts.trajectories.map((t) => t.inputIds.length);
  const full = opts.klPenalty === 'full';
  for (const idx of lengthBucketedMicroBatches([...Array(B).keys()], lengths, opts.microSize)) {
    const batch = packBatch(
      idx.map((i) => opts.trajectories[i]),
      opts.padId,
    );
    atShape({ kind: 'micro-batch', rows: idx.length, tokens: batch.ids.shape[1] }, () =>
      tf.tidy(() => {
        if (wantOld) {
          // Only the response positions are kept (scatterRows): the vocabulary work runs there, unless the full KL needs every position.
          const at = tf.tensor2d(batch.mask);
          const actor = tokenLogProbs(opts.actor, batch.ids, batch.attentionMask, { withLogSoftmax: full && !!opts.reference, at });
          scatterRows(out.oldLogp!, idx, actor.logp, batch.mask);
          if (opts.reference) {
            // The actor itself as the reference (its weights are the reference's): its log-probs serve twice.
            const ref =
              opts.reference === opts.actor
                ? actor
                : tokenLogProbs(opts.reference, batch.ids, batch.attentionMask, { withLogSoftmax: full, at });
            scatterRows(out.refLogp!, idx, ref.logp, batch.mask);
            const kl = full
              ? klFull(actor.logSoftmax as tf.Tensor3D, ref.logSoftmax as tf.Tensor3D)
              : klPenalty(actor.logp, ref.logp, opts.klPenalty as Exclude<KlPenalty, 'full'>);
            scatterRows(out.tokenKl!, idx, kl, batch.mask);
          }
        }
        if (opts.critic) scatterPrefixes(out.values!, idx, opts.critic.values(batch.ids, batch.attentionMask), lengths);
      }),
    );
    batch.ids.dispose();
    batch.attentionMask.dispose();
    if (opts.afterMicroBatch) await opts.afterMicroBatch();
  }
  return out;
}

/** What the losses read, per trajectory of the update: [B][T] shifted rows (T >= every trajectory's length - 1). */
export interface UpdateRows {
  trajectories: readonly Trajectory[];
  padId: number;
  /** 0/1 shifted response mask. */
  mask: number[][];
  advantages: number[][];
  /** Old log-probs, or null in the first and only minibatch of an on-policy update (the detached current ones). */
  oldLogp: number[][] | null;
  /** Reference log-probs (use_kl_loss). */
  refLogp: number[][] | null;
  /** Critic values at rollout time and GAE returns (gae). */
  values: number[][] | null;
  returns: number[][];
}

/** One packed micro-batch as a loss builder sees it; `pick` slices [B][T] rows to its rows and padded length. */
export interface MicroBatch {
  /** The micro-batch's place in its minibatch (0, 1, ...). */
  index: number;
  ids: tf.Tensor2D;
  attentionMask: tf.Tensor2D;
  /** float32 [b, Tm] shifted response mask. */
  mask: tf.Tensor2D;
  pick: (rows: number[][]) => tf.Tensor2D;
}

/**
 * One loss builder per micro-batch of `minibatch` (length-bucketed, `microSize` trajectories): each packs its
 * micro-batch, calls `loss` on it and frees the packed ids. The optimizer step (grad_step.ts) sums their gradients.
 */
export function microBatchLosses(
  rows: Pick<UpdateRows, 'trajectories' | 'padId'>,
  minibatch: readonly number[],
  microSize: number,
  loss: (mb: MicroBatch) => tf.Scalar,
): MicroBatchLoss[] {
  const lengths = rows.trajectories.map((t) => t.inputIds.length);
  return lengthBucketedMicroBatches(minibatch, lengths, microSize).map((idx, index) => ({
    rows: idx.length,
    tokens: paddedLength(idx.map((i) => rows.trajectories[i])),
    loss: () => {
      const batch = packBatch(
        idx.map((i) => rows.trajectories[i]),
        rows.padId,
      );
      const Tm = batch.mask[0].length;
      const pick = (r: number[][]) =>
        tf.tensor2d(
          idx.map((i) => r[i].slice(0, Tm)),
          [idx.length, Tm],
        );
      try {
        return loss({ index, ids: batch.ids, attentionMask: batch.attentionMask, mask: tf.tensor2d(batch.mask, [idx.length, Tm]), pick });
      } finally {
        batch.ids.dispose();
        batch.attentionMask.dispose();
      }
    },
  }));
}
