/** RAGEN-2's first-turn collapse diagnostics with a model: cross-scoring, sampling, when they run. */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { collapseDetectionDue, collapseDiagnostics, crossLogProbs } from '../../../src/algo/collapse_detection';
import { runInputFromFile } from '../../../src/cli/run_input';
import type { Trajectory } from '../../../src/contract';
import { tinyPreset } from '../../../src/model/config';
import { tokenLogProbs } from '../../../src/model/logprobs';
import { Qwen2 } from '../../../src/model/qwen2';
import { initTestBackend } from '../../helpers/backend';

before(async () => {
  await initTestBackend();
});

const config = (...o: string[]) =>
  runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', 'cd', ['collapse_detection.first_turn_enabled=true', ...o]).input.config;

/** log p(z | x) of one pair, scored alone (no padding, no batch). */
function alone(model: Qwen2, x: number[], z: number[]): number {
  const ids = [...x, ...z];
  return tf.tidy(() => {
    const { logp } = tokenLogProbs(model, tf.tensor2d([ids], [1, ids.length], 'int32'), tf.ones([1, ids.length]) as tf.Tensor2D);
    const v = logp.dataSync();
    let s = 0;
    for (let p = x.length; p < ids.length; p++) s += v[p - 1];
    return s;
  });
}

test('cross log-probs: every (reasoning, prompt) pair as scored alone, whatever the padding and micro-batch', async () => {
  const model = Qwen2.random(tinyPreset(101), 3);
  const prompts = [
    [5, 6, 7, 8],
    [9, 10],
  ];
  const reasoning = [[11, 12, 13], [14], [15, 16, 17, 18, 19]];
  for (const micro of [1, 2, 8]) {
    let beats = 0;
    const out = await crossLogProbs(model, prompts, reasoning, micro, 0, async () => {
      beats++;
    });
    assert.equal(beats, prompts.length * Math.ceil(reasoning.length / micro), 'a heartbeat after every micro-batch');
    reasoning.forEach((z, i) =>
      prompts.forEach((x, j) => {
        const want = alone(model, x, z);
        assert.ok(Math.abs(out.perSequence[i][j] - want) < 1e-4, `micro ${micro} pair ${i},${j}: ${out.perSequence[i][j]} vs ${want}`);
        assert.ok(Math.abs(out.perToken[i][j] - want / z.length) < 1e-4);
      }),
    );
  }
  model.dispose();
});

/** A trajectory whose first turn is prompt `x` then response `z` (then an observation and a second reply). */
const traj = (x: number[], z: number[]): Pick<Trajectory, 'inputIds' | 'responseMask'> => ({
  inputIds: [...x, ...z, 40, 41, 42],
  responseMask: [...x.map(() => 0), ...z.map(() => 1), 0, 1, 1],
});

test('diagnostics: the counts, RAGEN-2 metrics under collapse_first_turn_sample/, and num_samples drawn with the seed and step', async () => {
  const model = Qwen2.random(tinyPreset(101), 4);
  const batch = [
    traj([1, 2, 3], [20, 21]),
    traj([1, 2, 3], [22]),
    traj([4, 5], [23, 24, 25]),
    traj([4, 5], [20]),
    { inputIds: [6, 7], responseMask: [0, 0] },
  ] as Trajectory[];
  const all = await collapseDiagnostics(model, batch, config('collapse_detection.num_samples=null'), 0, 0);
  assert.equal(all['collapse/first_turn_num_total'], 5);
  assert.equal(all['collapse/first_turn_num_valid'], 4);
  assert.equal(all['collapse/first_turn_valid_rate'], 0.8);
  assert.equal(all['collapse_first_turn_sample/mi_upper_bound'], Math.log(2));
  assert.equal(all['collapse_first_turn_sample/retrieval_chance_level'], 0.5);
  for (const k of ['mi_estimate', 'mi_seq_estimate', 'retrieval_accuracy', 'conditional_entropy_est', 'mi_zscore'])
    assert.ok(Number.isFinite(all[`collapse_first_turn_sample/${k}`]), k);
  const a = await collapseDiagnostics(model, batch, config('collapse_detection.num_samples=2'), 7, 0);
  const b = await collapseDiagnostics(model, batch, config('collapse_detection.num_samples=2'), 7, 0);
  const strip = (m: Record<string, number>) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('timing_s/')));
  assert.deepEqual(strip(a), strip(b), 'the same pairs for the same seed and step');
  const one = await collapseDiagnostics(model, batch.slice(0, 2), config(), 0, 0);
  assert.equal(one['collapse/first_turn_num_valid'], 2);
  assert.equal(one['collapse_first_turn_sample/mi_estimate'], undefined, 'one distinct prompt: no MI');
  model.dispose();
});

test("when they run: RAGEN's global step 1, then every compute_freq; never when off", () => {
  const c = config('collapse_detection.compute_freq=5').collapse_detection;
  assert.deepEqual(
    [0, 1, 3, 4, 9, 10].map((s) => collapseDetectionDue(c, s)),
    [true, false, false, true, true, false],
  );
  assert.equal(collapseDetectionDue({ ...c, first_turn_enabled: false }, 0), false);
  assert.throws(
    () => config('collapse_detection.multi_turn_enabled=true'),
    /multi-turn sampling is not implemented in starpo; allowed: false/,
  );
});
