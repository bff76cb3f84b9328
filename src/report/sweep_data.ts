/**
 * The numbers of a sweep's comparison report (`starpo report <sweepId>`): each run's curves against steps
 * and against wall minutes, their mean and spread over seeds per grid point, the final table, and the
 * config keys that differ between runs. Pure, apart from `loadSweepRuns`, which reads the store.
 */
import type { StepMetrics, SweepSpec } from '../contract';
import type { ObjectStore } from '../storage/object_store';
import { loadMetrics } from './run_data';

/** "learning_rate=1e-4 kl_loss_coef=0" for a grid point (each key's last part); "-" for a sweep without a grid. */
export function pointText(point: Record<string, string> | undefined): string {
  const parts = Object.entries(point ?? {}).map(([k, v]) => `${k.split('.').at(-1)}=${v}`);
  return parts.length > 0 ? parts.join(' ') : '-';
}

/** One run of the sweep with its stored metrics (none yet for a run that has not started). */
export interface SweepRun {
  runId: string;
  point: number;
  seed: number;
  maxSteps: number;
  metrics: StepMetrics[];
}

/** Every run's metrics, in the spec's order. */
export async function loadSweepRuns(store: ObjectStore, spec: SweepSpec): Promise<SweepRun[]> {
  const runs: SweepRun[] = [];
  for (const c of spec.children) {
    runs.push({
      runId: c.run.runId,
      point: c.point,
      seed: c.seed,
      maxSteps: c.run.config.max_steps,
      metrics: await loadMetrics(store, c.run.runId),
    });
  }
  return runs;
}

/** A point of one run's curve: the step, the wall minutes since the run started (warm-up included), the value. */
export interface CurvePoint {
  step: number;
  minutes: number;
  value: number;
}

/**
 * One run's curve of `key`. Validation at step s runs before step s's rollouts, so it is placed at the
 * minutes the run had spent before step s; a train metric of step s at the end of step s. The warm-up's
 * seconds count from the start (warmup/seconds: a reused warm-up reports what training it cost, so grid points
 * that share one compare alike).
 */
export function curve(metrics: readonly StepMetrics[], key: string): CurvePoint[] {
  const sorted = [...metrics].sort((a, b) => a.step - b.step);
  let seconds = sorted[0]?.metrics['warmup/seconds'] ?? 0;
  const out: CurvePoint[] = [];
  const atStart = key.startsWith('val/');
  for (const m of sorted) {
    const before = seconds;
    seconds += m.metrics['time/step'] ?? 0;
    const v = m.metrics[key];
    if (v !== undefined && Number.isFinite(v)) out.push({ step: m.step, minutes: (atStart ? before : seconds) / 60, value: v });
  }
  return out;
}

/** Mean and spread over seeds at one x: the runs that reached it. */
export interface BandPoint {
  x: number;
  mean: number;
  min: number;
  max: number;
  std: number;
  n: number;
}

/** Mean, population std, min and max of values (n >= 1). */
export function spread(values: readonly number[]): Omit<BandPoint, 'x'> {
  const n = values.length;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const std = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / n);
  return { mean, std, min: Math.min(...values), max: Math.max(...values), n };
}

/**
 * The band of several runs' curves: at each step that any run reached, the spread of the values there;
 * against minutes, the x of a step is the mean minutes of the runs at it.
 */
export function band(curves: ReadonlyArray<readonly CurvePoint[]>, x: 'step' | 'minutes'): BandPoint[] {
  const bySteps = new Map<number, CurvePoint[]>();
  for (const c of curves) for (const p of c) bySteps.set(p.step, [...(bySteps.get(p.step) ?? []), p]);
  return [...bySteps]
    .sort((a, b) => a[0] - b[0])
    .map(([step, pts]) => ({
      x: x === 'step' ? step : pts.reduce((a, p) => a + p.minutes, 0) / pts.length,
      ...spread(pts.map((p) => p.value)),
    }));
}

/** A run's row of the final table. */
export interface FinalRow {
  runId: string;
  point: number;
  seed: number;
  /** Steps with metrics (the final validation's step not counted). */
  steps: number;
  maxSteps: number;
  /** Wall minutes so far (null before the run stored a step). */
  minutes: number | null;
  /** First and last validation success (val/env/success), and the best. */
  firstVal: number | null;
  lastVal: number | null;
  bestVal: number | null;
}

/** The final table's row of each run. */
export function finalRows(runs: readonly SweepRun[]): FinalRow[] {
  return runs.map((r) => {
    const val = curve(r.metrics, 'val/env/success');
    const seconds = (r.metrics[0]?.metrics['warmup/seconds'] ?? 0) + r.metrics.reduce((a, m) => a + (m.metrics['time/step'] ?? 0), 0);
    return {
      runId: r.runId,
      point: r.point,
      seed: r.seed,
      steps: r.metrics.filter((m) => m.metrics['time/step'] !== undefined).length,
      maxSteps: r.maxSteps,
      minutes: r.metrics.length > 0 ? seconds / 60 : null,
      firstVal: val[0]?.value ?? null,
      lastVal: val.at(-1)?.value ?? null,
      bestVal: val.length > 0 ? Math.max(...val.map((p) => p.value)) : null,
    };
  });
}

/** Every leaf of a JSON value by dotted path (arrays as one value). */
function leaves(value: unknown, prefix = '', out = new Map<string, string>()): Map<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) leaves(v, prefix ? `${prefix}.${k}` : k, out);
  } else out.set(prefix, JSON.stringify(value));
  return out;
}

/** The config keys whose values differ between the sweep's runs, with each run's value (by run id). */
export function differingKeys(spec: SweepSpec): Array<{ key: string; values: Record<string, string> }> {
  const flat = spec.children.map((c) => [c.run.runId, leaves(c.run.config)] as const);
  const keys = new Set(flat.flatMap(([, m]) => [...m.keys()]));
  return [...keys]
    .filter((k) => new Set(flat.map(([, m]) => m.get(k))).size > 1)
    .sort()
    .map((key) => ({ key, values: Object.fromEntries(flat.map(([id, m]) => [id, m.get(key) ?? '(absent)'])) }));
}
