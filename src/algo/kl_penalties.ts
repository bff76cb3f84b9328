/**
 * kl_penalty values (SPEC.md §2), tfjs-free so the config schema can import them (kl.ts computes them).
 * `full` needs whole distributions: use klFull for it.
 */
export const KL_PENALTIES = ['kl', 'abs', 'mse', 'k3', 'full'] as const;
/** One of KL_PENALTIES. */
export type KlPenalty = (typeof KL_PENALTIES)[number];
