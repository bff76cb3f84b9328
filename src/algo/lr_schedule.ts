/**
 * Learning-rate schedules of actor_train.training_args (docs/numerics.md §2, §6): linear warmup over warmup_steps,
 * then constant, linear decay to 0, or cosine decay to 0 at total steps (HF transformers
 * get_{constant,linear,cosine}_schedule_with_warmup, as ROLL uses them).
 */

/** Schedule settings; steps count optimizer steps. */
export interface LrSchedule {
  /** learning_rate (>= 0). */
  base: number;
  /** lr_scheduler_type. */
  type: 'constant' | 'linear' | 'cosine';
  /** warmup_steps (>= 0). */
  warmupSteps: number;
  /** Steps at which linear / cosine reach 0 (>= 0). */
  totalSteps: number;
}

/**
 * The learning rate at step `step` (0-based), as HF's LambdaLR factors times base:
 * step < warmupSteps: base * step / warmupSteps (0 at step 0); then constant: base; linear: base * (1 - p);
 * cosine: base * 0.5 * (1 + cos(pi p)), with p = min(1, (step - warmupSteps) / max(1, totalSteps - warmupSteps)).
 * Past totalSteps the rate stays 0 (HF's cosine would rise again; clamping p avoids it).
 * @returns the learning rate (same units as base)
 * @throws RangeError on a negative or non-finite base, step, warmupSteps or totalSteps.
 */
export function lrAt(s: LrSchedule, step: number): number {
  for (const [name, v] of [
    ['learning_rate', s.base],
    ['warmup_steps', s.warmupSteps],
    ['total steps', s.totalSteps],
    ['step', step],
  ] as const) {
    if (!(v >= 0 && Number.isFinite(v))) throw new RangeError(`lrAt: ${name} = ${v}; allowed: a finite number >= 0`);
  }
  if (step < s.warmupSteps) return (s.base * step) / s.warmupSteps;
  if (s.type === 'constant') return s.base;
  const span = Math.max(1, s.totalSteps - s.warmupSteps);
  const progress = Math.min(1, (step - s.warmupSteps) / span);
  if (s.type === 'linear') return s.base * (1 - progress);
  return s.base * 0.5 * (1 + Math.cos(Math.PI * progress));
}
