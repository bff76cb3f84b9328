/**
 * Builds the `starpo report` HTML of a run from the object store: metrics -> charts (SVG), validation
 * and collapse tables; train rollouts + the update's trajectory scores -> the trajectory browser. And of a
 * sweep: its runs' metrics -> curves per grid point, the final tables and the configs that differ.
 */
import type { RunSpec, SweepSpec } from '../contract';
import type { ObjectStore } from '../storage/object_store';
import { chartsOf } from './charts';
import { gridLegends, groupStep } from './groups';
import { reportHtml } from './html';
import { loadMetrics, loadScores, loadTrajectories, rolloutIndex } from './run_data';
import { chartSvg } from './svg';
import { sweepCharts } from './sweep_charts';
import { finalRows, loadSweepRuns } from './sweep_data';
import { sweepReportHtml } from './sweep_html';

/**
 * At most `cap` of `steps` (ascending), evenly spaced, first and last always included.
 * @throws RangeError unless cap is an integer >= 1
 */
export function spreadSteps(steps: readonly number[], cap: number): number[] {
  if (!Number.isInteger(cap) || cap < 1) throw new RangeError(`trajectory steps cap ${cap}; allowed: an integer >= 1`);
  if (steps.length <= cap) return [...steps];
  if (cap === 1) return [steps[steps.length - 1]];
  const picked = new Set<number>();
  for (let i = 0; i < cap; i++) picked.add(steps[Math.round((i * (steps.length - 1)) / (cap - 1))]);
  return steps.filter((s) => picked.has(s));
}

/**
 * The report of the run `spec` (its run.json) as one HTML document.
 * @param opts.trajectorySteps at most this many train steps in the trajectory browser (spreadSteps)
 * @param opts.state the run's state line (cli/report.ts runStateText)
 * @param opts.warn where notes about unusable objects go
 * @throws CorruptObjectError / ObjectNotFoundError for a damaged shard
 */
export async function buildReport(
  store: ObjectStore,
  spec: RunSpec,
  opts: { trajectorySteps: number; state: string; warn: (line: string) => void },
): Promise<string> {
  const { runId } = spec;
  const metrics = await loadMetrics(store, runId);
  const charts = [];
  for (const chart of chartsOf(spec.config, metrics)) charts.push({ chart, svg: chart.series.length > 0 ? await chartSvg(chart) : null });
  const train = (await rolloutIndex(store, runId)).train;
  const all = [...train.keys()].sort((a, b) => a - b);
  const shown = spreadSteps(all, opts.trajectorySteps);
  const steps = [];
  for (const step of shown) {
    const trajectories = await loadTrajectories(store, runId, step, 'train', train.get(step) as number[]);
    if (trajectories.length > 0) steps.push(groupStep(step, trajectories, await loadScores(store, runId, step, opts.warn)));
  }
  return reportHtml({
    spec,
    metrics,
    charts,
    steps,
    omittedSteps: all.filter((s) => !shown.includes(s)),
    generatedAt: new Date().toISOString(),
    state: opts.state,
    legends: gridLegends(spec.config, [...spec.config.train_env_manager.tags, ...spec.config.val_env_manager.tags]),
  });
}

/** The comparison report of the sweep `spec` (its sweep.json) as one HTML document; `state` as for a run. */
export async function buildSweepReport(store: ObjectStore, spec: SweepSpec, state: string): Promise<string> {
  const runs = await loadSweepRuns(store, spec);
  const charts = [];
  for (const chart of sweepCharts(spec, runs)) charts.push({ chart, svg: await chartSvg(chart) });
  return sweepReportHtml({ spec, state, charts, rows: finalRows(runs), generatedAt: new Date().toISOString() });
}
