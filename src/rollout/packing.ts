/**
 * Packing (docs/numerics.md §4 Packing, §6): how an episode's turns become one token-in/token-out
 * trajectory (ids = prompt_0 ++ response_0 ++ ..., response mask 1 on sampled tokens), and how those
 * arrays are SHIFTED for the loss: index t of a shifted array is about token t+1, whose log-prob the
 * model computes at position t. Trajectories are stored unshifted; the update shifts them (shiftedArrays).
 */
import type { Trajectory } from '../contract';

/** The token arrays of a trajectory (all of length L, the trajectory's token count). */
export type PackedTokens = Pick<Trajectory, 'inputIds' | 'responseMask' | 'sampleLogprobs'>;

/** No tokens yet. */
export function emptyPacked(): PackedTokens {
  return { inputIds: [], responseMask: [], sampleLogprobs: [] };
}

/**
 * Appends one turn: its prompt tokens (mask 0, log-prob 0), then the sampled response tokens (mask 1,
 * their sampling log-probs; the stop token included when sampled). A reply not to be learned from
 * (`learned` false: a demonstration's noise move) gets mask 0, like the prompt.
 */
export function appendTurn(
  packed: PackedTokens,
  prompt: readonly number[],
  response: readonly number[],
  logprobs: readonly number[],
  learned = true,
): void {
  packed.inputIds.push(...prompt, ...response);
  packed.responseMask.push(...prompt.map(() => 0), ...response.map(() => (learned ? 1 : 0)));
  packed.sampleLogprobs.push(...prompt.map(() => 0), ...logprobs);
}

/** The shifted arrays of a batch of trajectories, each padded to L-1. */
export interface ShiftedArrays {
  /** [B][L-1] shifted response mask: m[t] = 1 when token t+1 was sampled by the policy. */
  mask: number[][];
  /** [B] shifted index of each trajectory's last sampled token, -1 when it has none. */
  lastIndex: number[];
  /** [B][L-1] shifted sampling-time log-probs (nats), 0 off the mask. */
  sampleLogprobs: number[][];
}

/**
 * Shifted response mask, last sampled index and sampling log-probs of each trajectory, padded to L-1.
 * @param L padded token length (>= every trajectory's length)
 */
export function shiftedArrays(trajectories: readonly PackedTokens[], L: number): ShiftedArrays {
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
