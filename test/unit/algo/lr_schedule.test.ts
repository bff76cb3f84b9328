import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type LrSchedule, lrAt } from '../../../src/algo/lr_schedule';

const S = { base: 0.001, warmupSteps: 4, totalSteps: 20 };
const check = (s: LrSchedule, steps: number[], expected: number[]): void =>
  steps.forEach((k, i) => assert.ok(Math.abs(lrAt(s, k) - expected[i]) < 1e-15, `${s.type} step ${k}: ${lrAt(s, k)} vs ${expected[i]}`));

test('lr schedule: warmup: base * step / warmup_steps, 0 at step 0, base at the end of warmup', () => {
  for (const type of ['constant', 'linear', 'cosine'] as const) {
    // 0.001 * 0/4, 1/4, 3/4, then the full rate at step 4
    check({ ...S, type }, [0, 1, 3, 4], [0, 0.00025, 0.00075, 0.001]);
  }
});

test('lr schedule: constant stays at base after warmup, also past total steps', () => {
  check({ ...S, type: 'constant' }, [5, 19, 20, 50], [0.001, 0.001, 0.001, 0.001]);
});

test('lr schedule: linear decays to 0 at total steps: base * (1 - (step - 4) / 16)', () => {
  // step 12: 1 - 8/16 = 0.5; step 19: 1/16 = 0.0625; step 20: 0; step 25: clamped at 0
  check({ ...S, type: 'linear' }, [12, 19, 20, 25], [0.0005, 0.0000625, 0, 0]);
});

test('lr schedule: cosine: base * 0.5 * (1 + cos(pi * p)), p = (step - 4) / 16', () => {
  // step 8: p 0.25 -> 0.5 * (1 + 0.7071068) = 0.8535534; step 12: p 0.5 -> 0.5; step 16: p 0.75 -> 0.1464466;
  // step 20: p 1 -> 0; step 24: p clamped to 1 -> 0 (HF would rise again)
  check({ ...S, type: 'cosine' }, [8, 12, 16, 20, 24], [0.001 * 0.5 * (1 + Math.SQRT1_2), 0.0005, 0.001 * 0.5 * (1 - Math.SQRT1_2), 0, 0]);
  assert.ok(Math.abs(lrAt({ ...S, type: 'cosine' }, 8) - 0.00085355339) < 1e-12);
});

test('lr schedule: no warmup starts at base; totalSteps <= warmupSteps decays in one step', () => {
  check({ base: 0.5, warmupSteps: 0, totalSteps: 4, type: 'linear' }, [0, 1, 3, 4], [0.5, 0.375, 0.125, 0]);
  // span = max(1, 2 - 2) = 1: step 2 -> p 0 -> base; step 3 -> p 1 -> 0
  check({ base: 0.5, warmupSteps: 2, totalSteps: 2, type: 'linear' }, [1, 2, 3], [0.25, 0.5, 0]);
});

test('lr schedule: errors name the setting', () => {
  assert.throws(() => lrAt({ ...S, type: 'linear', base: -1 }, 0), /learning_rate = -1; allowed: a finite number >= 0/);
  assert.throws(() => lrAt({ ...S, type: 'linear', warmupSteps: NaN }, 0), /warmup_steps = NaN/);
  assert.throws(() => lrAt({ ...S, type: 'linear' }, -1), /step = -1/);
});

test('lr schedule: HF learning-rate schedules: warmup then constant, linear and cosine decay', () => {
  const s = { base: 1, warmupSteps: 2, totalSteps: 10 };
  assert.deepEqual(
    [0, 1, 2, 5].map((k) => lrAt({ ...s, type: 'constant' }, k)),
    [0, 0.5, 1, 1],
  );
  assert.deepEqual(
    [2, 6, 10].map((k) => lrAt({ ...s, type: 'linear' }, k)),
    [1, 0.5, 0],
  );
  assert.ok(Math.abs(lrAt({ ...s, type: 'cosine' }, 6) - 0.5) < 1e-12);
});
