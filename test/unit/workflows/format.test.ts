import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Progress } from '../../../src/contract';
import { currentDetails, formatNumber, progressLine } from '../../../src/workflows/format';
import { stepCompute } from '../../../src/workflows/progress';

const base: Progress = {
  runId: 'r',
  step: 12,
  maxSteps: 30,
  phase: 'rollout',
  paused: false,
  stopRequested: null,
  lastMetrics: { 'env/success': 0.3124 },
  lastValidation: null,
  validationCurve: [{ step: 10, success: 0.305 }],
  latestCheckpoint: null,
  secondsPerStep: 12.08,
  compute: null,
};

test('progressLine shows step, last train and val success, s/step and the pause/stop state', () => {
  assert.equal(progressLine(base), 'step 12/30 · train success 0.312 · val success 0.305 (step 10) · 12.1 s/step');
  assert.equal(
    progressLine({ ...base, paused: true }),
    'step 12/30 · train success 0.312 · val success 0.305 (step 10) · 12.1 s/step · pausing after this step',
  );
  assert.match(progressLine({ ...base, paused: true, phase: 'paused' }), / · paused$/);
  assert.match(progressLine({ ...base, paused: true, phase: 'paused', stopRequested: 'stop requested' }), / · stopping$/);
  assert.equal(
    progressLine({ ...base, step: 0, lastMetrics: {}, validationCurve: [], secondsPerStep: null }),
    'step 0/30 · train success - · val success - · - s/step',
  );
});

test('currentDetails (the Temporal UI): the phase after the step, then the pause/stop request', () => {
  assert.equal(currentDetails(base), 'step 12/30 · rollout · train success 0.312 · val success 0.305 (step 10) · 12.1 s/step');
  assert.equal(
    currentDetails({ ...base, phase: 'paused', paused: true }),
    'step 12/30 · paused · train success 0.312 · val success 0.305 (step 10) · 12.1 s/step',
  );
  assert.match(currentDetails({ ...base, phase: 'update', paused: true }), /^step 12\/30 · update · .* · pausing after this step$/);
  assert.match(
    currentDetails({ ...base, phase: 'validation', stopRequested: 'stop: enough' }),
    /^step 12\/30 · validation · .* · stopping$/,
  );
});

test('currentDetails: where the last step computed, on a second line, once a step is done', () => {
  const compute = {
    rollout: [
      { backend: 'wasm', device: 'CPU' },
      { backend: 'tensorflow', device: 'CPU' },
    ],
    update: { backend: 'tensorflow-gpu', device: 'GPU' },
  };
  assert.equal(
    currentDetails({ ...base, compute }),
    'step 12/30 · rollout · train success 0.312 · val success 0.305 (step 10) · 12.1 s/step\n\nrollout wasm (CPU) + tensorflow (CPU), update tensorflow-gpu (GPU)',
  );
  assert.equal(
    currentDetails({ ...base, compute: { rollout: [], update: null } })
      .split('\n')
      .at(-1),
    'rollout -, update -',
  );
});

test("stepCompute: the distinct backends of the rollout shards in shard order, and the update's", () => {
  const shard = (backend?: string) => ({
    trajectories: ref,
    metrics: { sums: {}, counts: {}, totals: {} },
    seconds: 1,
    ...(backend ? { compute: { backend, device: 'CPU' } } : {}),
  });
  const ref = { bucket: 'b', key: 'k', sha256: 'a'.repeat(64), bytes: 1 };
  const update = { checkpoint: ref, metrics: {}, skipReason: null, compute: { backend: 'tensorflow', device: 'CPU' } };
  assert.deepEqual(stepCompute([shard('wasm'), shard(), shard('tensorflow'), shard('wasm')], update), {
    rollout: [
      { backend: 'wasm', device: 'CPU' },
      { backend: 'tensorflow', device: 'CPU' },
    ],
    update: { backend: 'tensorflow', device: 'CPU' },
  });
  assert.deepEqual(stepCompute([shard()], { ...update, compute: undefined }), { rollout: [], update: null });
});

test('formatNumber: fixed decimals, "-" for missing values', () => {
  assert.equal(formatNumber(0.12345), '0.123');
  assert.equal(formatNumber(2, 1), '2.0');
  for (const x of [undefined, null, Number.NaN]) assert.equal(formatNumber(x), '-');
  // a tiny negative value rounds to zero without a sign
  assert.equal(formatNumber(-2e-6, 4), '0.0000');
  assert.equal(formatNumber(-0.4, 0), '0');
  assert.equal(formatNumber(-0.5, 1), '-0.5');
});
