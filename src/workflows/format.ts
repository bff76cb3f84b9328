/**
 * Text forms of a run's progress, shared by the workflow (current details in the UI) and the CLI
 * (`starpo status`, the progress bar). Pure; safe in workflow code.
 */
import type { Progress } from './api';

/** A number with `digits` decimals, or '-' when missing. */
export function formatNumber(x: number | null | undefined, digits = 3): string {
  return x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(digits);
}

/**
 * One line about a run's progress, e.g. "step 12/30 · train success 0.312 · val success 0.305
 * (step 10) · 12.1 s/step · paused": the workflow's current details in the UI and `starpo status`.
 */
export function progressLine(p: Progress): string {
  const val = p.validationCurve.at(-1);
  const parts = [
    `step ${p.step}/${p.maxSteps}`,
    `train success ${formatNumber(p.lastMetrics['env/success'])}`,
    val ? `val success ${formatNumber(val.success)} (step ${val.step})` : 'val success -',
    `${formatNumber(p.secondsPerStep, 1)} s/step`,
  ];
  if (p.stopRequested !== null) parts.push('stopping');
  else if (p.phase === 'paused') parts.push('paused');
  else if (p.paused) parts.push('pausing after this step');
  return parts.join(' · ');
}
