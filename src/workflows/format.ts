/**
 * Text forms of a run's progress, shared by the workflow (current details in the UI) and the CLI
 * (`starpo status`, the progress bar, the report). Pure; safe in workflow code.
 */
import type { ComputeInfo, StepCompute } from '../contract/activities';
import type { Progress } from '../contract/workflow';

/** A number with `digits` decimals, or '-' when missing; a value that rounds to zero prints without a sign ("0.0000", not "-0.0000"). */
export function formatNumber(x: number | null | undefined, digits = 3): string {
  if (x === null || x === undefined || Number.isNaN(x)) return '-';
  const text = x.toFixed(digits);
  return /^-0\.?0*$/.test(text) ? text.slice(1) : text;
}

/** e.g. "tensorflow (CPU)". */
function computeText(c: ComputeInfo): string {
  return `${c.backend} (${c.device})`;
}

/** e.g. "rollout wasm (CPU), update tensorflow (CPU)"; '-' for a part not recorded. */
export function describeCompute(c: StepCompute): string {
  const rollout = c.rollout.length > 0 ? c.rollout.map(computeText).join(' + ') : '-';
  return `rollout ${rollout}, update ${c.update ? computeText(c.update) : '-'}`;
}

/** step, train success, val success and s/step of a run's progress. */
function progressParts(p: Progress): string[] {
  const val = p.validationCurve.at(-1);
  return [
    `step ${p.step}/${p.maxSteps}`,
    `train success ${formatNumber(p.lastMetrics['env/success'])}`,
    val ? `val success ${formatNumber(val.success)} (step ${val.step})` : 'val success -',
    `${formatNumber(p.secondsPerStep, 1)} s/step`,
  ];
}

/** 'stopping' or 'pausing after this step' when requested, else null ('paused' is a phase). */
function requestNote(p: Progress): string | null {
  if (p.stopRequested !== null) return 'stopping';
  return p.paused && p.phase !== 'paused' ? 'pausing after this step' : null;
}

/**
 * One line about a run's progress, e.g. "step 12/30 · train success 0.312 · val success 0.305
 * (step 10) · 12.1 s/step · paused": `starpo status`'s progress line.
 */
export function progressLine(p: Progress): string {
  const note = p.stopRequested === null && p.phase === 'paused' ? 'paused' : requestNote(p);
  return [...progressParts(p), ...(note ? [note] : [])].join(' · ');
}

/**
 * The workflow's current details in the Temporal UI (setCurrentDetails): progressLine with the
 * phase after the step, e.g. "step 12/30 · rollout · train success 0.312 · val success 0.305
 * (step 10) · 12.1 s/step", and, once a step is done, where it computed on a second line
 * ("rollout wasm (CPU), update tensorflow (CPU)"), after a note in bold when the phase waits on a task
 * queue no worker polls and a tracker's last failure.
 */
export function currentDetails(p: Progress): string {
  const [step, ...rest] = progressParts(p);
  const note = requestNote(p);
  const line = [step, p.phase, ...rest, ...(note ? [note] : [])].join(' · ');
  const blocks = [
    line,
    ...(p.workerNote ? [`**${p.workerNote}**`] : []),
    ...(p.trackerNote ? [`tracker: ${p.trackerNote}`] : []),
    ...(p.compute ? [describeCompute(p.compute)] : []),
  ];
  return blocks.join('\n\n');
}
