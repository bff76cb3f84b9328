/** The numbers of a sweep's comparison report: curves by step and wall minutes, bands over seeds, final rows, differing config keys. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sweepSpecFromFile } from '../../../src/cli/sweep_spec';
import type { StepMetrics } from '../../../src/contract';
import { band, curve, differingKeys, finalRows, spread } from '../../../src/report/sweep_data';

/** A run's stored metrics: validation before steps 0 and 2 and after the last, 60 s per step, a 120 s warm-up. */
function runMetrics(val: [number, number, number], train: [number, number]): StepMetrics[] {
  return [
    { step: 0, metrics: { 'warmup/seconds': 120, 'val/env/success': val[0], 'env/success': train[0], 'time/step': 60 } },
    { step: 1, metrics: { 'env/success': train[1], 'time/step': 60 } },
    { step: 2, metrics: { 'val/env/success': val[2], 'time/step': 60 } },
    { step: 3, metrics: { 'val/env/success': val[1] } }, // the final validation: no step of its own
  ];
}

test('a curve places validation before its step and train metrics after it, counting the warm-up', () => {
  const m = runMetrics([0.5, 0.9, 0.7], [0.25, 0.75]);
  assert.deepEqual(curve(m, 'val/env/success'), [
    { step: 0, minutes: 2, value: 0.5 },
    { step: 2, minutes: 4, value: 0.7 },
    { step: 3, minutes: 5, value: 0.9 },
  ]);
  assert.deepEqual(curve(m, 'env/success'), [
    { step: 0, minutes: 3, value: 0.25 },
    { step: 1, minutes: 4, value: 0.75 },
  ]);
});

test('spread and bands: mean, population std, min, max over the runs that reached each step', () => {
  assert.deepEqual(spread([1, 3]), { mean: 2, std: 1, min: 1, max: 3, n: 2 });
  const a = curve(runMetrics([0.5, 0.9, 0.7], [0, 0]), 'val/env/success');
  const b = curve(runMetrics([0.3, 0.5, 0.6], [0, 0]), 'val/env/success').slice(0, 2); // b stopped before its final validation
  const byStep = band([a, b], 'step');
  assert.deepEqual(
    byStep.map((p) => [p.x, p.n, p.min, p.max]),
    [
      [0, 2, 0.3, 0.5],
      [2, 2, 0.6, 0.7],
      [3, 1, 0.9, 0.9],
    ],
  );
  assert.ok(Math.abs(byStep[0].mean - 0.4) < 1e-12);
  assert.deepEqual(
    band([a, b], 'minutes').map((p) => p.x),
    [2, 4, 5],
  );
});

test('final rows: first, last and best validation, steps trained and wall minutes of each run', () => {
  const [row] = finalRows([{ runId: 'r', point: 0, seed: 7, maxSteps: 3, metrics: runMetrics([0.5, 0.9, 0.7], [0, 0]) }]);
  assert.deepEqual(row, { runId: 'r', point: 0, seed: 7, steps: 3, maxSteps: 3, minutes: 5, firstVal: 0.5, lastVal: 0.9, bestVal: 0.9 });
  const [empty] = finalRows([{ runId: 'n', point: 0, seed: 8, maxSteps: 3, metrics: [] }]);
  assert.deepEqual(
    [empty.steps, empty.minutes, empty.firstVal, empty.lastVal, empty.bestVal],
    [0, null, null, null, null],
    'not started: no figures',
  );
});

test('differing keys: only what the grid and the seeds change', () => {
  const spec = sweepSpecFromFile('test/fixtures/tiny_frozen_lake.yaml', [], {
    seeds: 2,
    grid: [{ key: 'actor_train.training_args.learning_rate', values: ['1e-4', '3e-4'] }],
    parallel: 1,
    sweepId: 'sw',
  });
  const diff = differingKeys(spec);
  assert.deepEqual(
    diff.map((d) => d.key),
    ['actor_train.training_args.learning_rate', 'seed'],
  );
  assert.deepEqual(diff[1].values, { 'sw-g0-seed7': '7', 'sw-g1-seed7': '7', 'sw-g0-seed8': '8', 'sw-g1-seed8': '8' });
});
