/**
 * The charts of a sweep's comparison report: for each compared metric, one chart against steps and one
 * against wall minutes, a line per grid point (the mean over its seeds) over a band from the lowest to the
 * highest seed. Pure; svg.ts draws them.
 */
import type { SweepSpec } from '../contract';
import type { Chart } from './charts';
import { type BandPoint, band, curve, pointText, type SweepRun } from './sweep_data';

/** The metrics compared, in display order: [key, title, unit, y range]. */
const COMPARED: ReadonlyArray<readonly [string, string, string, Chart['y']]> = [
  ['val/env/success', 'Validation success', 'success', { fixed: [0, 1] }],
  ['env/success', 'Train success', 'success', { fixed: [0, 1] }],
  ['rollout/in_group_std', 'In-group reward std', 'std', 'nonNegative'],
  ['actor/entropy', 'Token entropy of the policy', 'nats', 'nonNegative'],
  ['env/response_length', 'Response length', 'tokens', 'nonNegative'],
  ['collapse_first_turn_sample/mi_estimate', 'Prompt-reasoning mutual information, first turn (RAGEN-2)', 'nats per token', 'data'],
  ['collapse_first_turn_sample/retrieval_accuracy', 'Prompt retrieval accuracy, first turn (RAGEN-2)', 'accuracy', { fixed: [0, 1] }],
];

/** "g0 learning_rate=1e-4" for a grid point; "all runs" without a grid. */
export function pointName(spec: SweepSpec, point: number): string {
  const text = pointText(spec.points[point]);
  return text === '-' ? 'all runs' : `g${point} ${text}`;
}

/** The bands of one metric, per grid point with at least one value. */
export function pointBands(
  spec: SweepSpec,
  runs: readonly SweepRun[],
  key: string,
  x: 'step' | 'minutes',
): Array<{ name: string; band: BandPoint[] }> {
  return spec.points.flatMap((_, p) => {
    const b = band(
      runs.filter((r) => r.point === p).map((r) => curve(r.metrics, key)),
      x,
    );
    return b.length > 0 ? [{ name: pointName(spec, p), band: b }] : [];
  });
}

/** Every compared metric that some run recorded, against steps and against wall minutes (data-chart ids `<key>@step|minutes`). */
export function sweepCharts(spec: SweepSpec, runs: readonly SweepRun[]): Chart[] {
  return COMPARED.flatMap(([key, title, unit, y]) =>
    (['step', 'minutes'] as const).flatMap((x): Chart[] => {
      const bands = pointBands(spec, runs, key, x);
      if (bands.length === 0) return [];
      return [
        {
          id: `${key}@${x}`,
          title: `${title}, by ${x === 'step' ? 'step' : 'wall minutes'} (mean over the seeds that reached each point; band: lowest to highest)`,
          unit,
          y,
          series: bands.map((b) => ({ name: b.name, points: b.band.map((p) => ({ step: p.x, value: p.mean })) })),
          bands: bands.map((b) => ({ name: b.name, points: b.band.map((p) => ({ step: p.x, lo: p.min, hi: p.max })) })),
          floor: null,
          marks: [],
          ...(x === 'minutes' ? { xTitle: 'wall minutes (warm-up included)' } : {}),
        },
      ];
    }),
  );
}
