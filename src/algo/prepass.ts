/**
 * The no-gradient pass before an update (ROLL agentic pipeline: compute_log_probs of the actor and
 * the reference, critic compute_values): old log-probs, reference log-probs, the token-level KL of
 * old vs reference under kl_penalty, and the critic's values, for every trajectory of the batch.
 * Each is computed only when the update needs it (SPEC.md §5.2-5.3, §6). With asynchronous rollouts the
 * old log-probs of stale trajectories are not computed here but taken from sampling (staleness.ts
 * oldLogpRows; ROLL roll/utils/train_infer_corrections.py uses the inference log-probs the same way), so
 * ppo_update.ts asks for `oldLogp` only when some trajectory was sampled by the policy being updated.
 */
import * as tf from '@tensorflow/tfjs';
import type { Qwen2 } from '../model/qwen2';
import type { ValueModel } from '../model/value_model';
import { tokenLogProbs } from '../model/logprobs';
import type { Trajectory } from '../rollout/types';
import { lengthBucketedMicroBatches, packBatch } from './batch';
import { klFull, klPenalty, type KlPenalty } from './kl';

/** What the pass computes. All arrays are [B][T] shifted (T >= padded batch length - 1); see each for its zeros. */
export interface PrepassOutput {
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
  idx.forEach((i, r) => rows[r].forEach((v, k) => { out[i][k] = v * mask[r][k]; }));
}

/** Copies the first lengths[i] entries of rows of a [b, Lm] tensor into full-length [T] rows (no mask). */
function scatterPrefixes(out: number[][], idx: readonly number[], t: tf.Tensor2D, lengths: readonly number[]): void {
  const rows = t.arraySync();
  idx.forEach((i, r) => {
    for (let k = 0; k < Math.min(lengths[i], out[i].length); k++) out[i][k] = rows[r][k];
  });
}

/**
 * Runs the pass in micro-batches of `microSize` trajectories (bucketed by length).
 * @param T shifted length of the whole batch (>= paddedLength - 1)
 * @param oldLogp compute old log-probs even without a reference (ppo_epochs > 1 or several minibatches)
 * @param reference frozen reference policy; with it refLogp and tokenKl are computed
 * @param critic value model; with it values are computed
 * @param afterMicroBatch awaited between micro-batches (heartbeats)
 */
export async function prepass(opts: {
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
}): Promise<PrepassOutput> {
  const B = opts.trajectories.length;
  const blank = () => Array.from({ length: B }, () => new Array<number>(opts.T).fill(0));
  const wantOld = opts.oldLogp || !!opts.reference;
  const out: PrepassOutput = {
    oldLogp: wantOld ? blank() : null,
    refLogp: opts.reference ? blank() : null,
    tokenKl: opts.reference ? blank() : null,
    values: opts.critic ? blank() : null,
  };
  const lengths = opts.trajectories.map((t) => t.inputIds.length);
  const full = opts.klPenalty === 'full';
  for (const idx of lengthBucketedMicroBatches([...Array(B).keys()], lengths, opts.microSize)) {
    const batch = packBatch(idx.map((i) => opts.trajectories[i]), opts.padId);
    tf.tidy(() => {
      if (wantOld) {
        const actor = tokenLogProbs(opts.actor, batch.ids, batch.attentionMask, full && !!opts.reference);
        scatterRows(out.oldLogp!, idx, actor.logp, batch.mask);
        if (opts.reference) {
          const ref = tokenLogProbs(opts.reference, batch.ids, batch.attentionMask, full);
          scatterRows(out.refLogp!, idx, ref.logp, batch.mask);
          const kl = full
            ? klFull(actor.logSoftmax as tf.Tensor3D, ref.logSoftmax as tf.Tensor3D)
            : klPenalty(actor.logp, ref.logp, opts.klPenalty as Exclude<KlPenalty, 'full'>);
          scatterRows(out.tokenKl!, idx, kl, batch.mask);
        }
      }
      if (opts.critic) scatterPrefixes(out.values!, idx, opts.critic.values(batch.ids, batch.attentionMask), lengths);
    });
    batch.ids.dispose();
    batch.attentionMask.dispose();
    if (opts.afterMicroBatch) await opts.afterMicroBatch();
  }
  return out;
}
