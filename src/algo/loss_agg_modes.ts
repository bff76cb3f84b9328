/** loss_agg_mode values (SPEC.md §2, §6), tfjs-free so the config schema can import them (loss.ts aggregates). */
export const LOSS_AGG_MODES = ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm'] as const;
/** One of LOSS_AGG_MODES. */
export type LossAggMode = (typeof LOSS_AGG_MODES)[number];
