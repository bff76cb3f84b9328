/**
 * Learning-rate schedules of actor_train.training_args (SPEC.md §2): linear warmup over warmup_steps,
 * then constant, linear decay to 0, or cosine decay to 0 at total steps (HF transformers
 * get_{constant,linear,cosine}_schedule_with_warmup, as ROLL uses them).
 */

/** Schedule settings; steps count optimizer steps. */
export interface LrSchedule {
  base: number;
  type: 'constant' | 'linear' | 'cosine';
  warmupSteps: number;
  totalSteps: number;
}

/** The learning rate at optimizer step `step` (0-based). */
export function lrAt(s: LrSchedule, step: number): number {
  if (step < s.warmupSteps) return (s.base * step) / s.warmupSteps;
  if (s.type === 'constant') return s.base;
  const span = Math.max(1, s.totalSteps - s.warmupSteps);
  const progress = Math.min(1, (step - s.warmupSteps) / span);
  if (s.type === 'linear') return s.base * (1 - progress);
  return s.base * 0.5 * (1 + Math.cos(Math.PI * progress));
}
