/**
 * SmolLM2-135M-Instruct, converted from its PyPI GGUF by `starpo model get`, against transformers' own GGUF loader
 * (test/fixtures/hf/smollm2/expected.json): at every position of 3 prompts, the logits at fixed vocabulary indices,
 * the top 5 and the logsumexp over the whole vocabulary, and 32 greedy tokens identical. Runs on wasm and, through
 * native_suite.test.ts, on native TensorFlow.
 * The reference logits are transformers' in float64 (the model's exact logits); any float32 run differs from them
 * by about 1e-4 at logits of magnitude 40 after 30 layers (transformers' own: the fixture's
 * transformers_float32_max_error), so the bound is allclose's: 1e-4 absolute plus 1e-5 relative.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { countParams } from '../../../src/model/config';
import { generate } from '../../../src/model/generate';
import { modelFromFolder } from '../../../src/model/hf/weights';
import type { Qwen2 } from '../../../src/model/qwen2';
import { logSumExp } from '../../../src/model/sampling';
import { initTestBackend } from '../../helpers/backend';
import { smollm2Expected as expected, smollm2Folder } from '../../helpers/smollm2';

const ATOL = 1e-4;
const RTOL = 1e-5;
/** How far a float32 logit may be from the exact one, relative to the bound (<= 1 passes). */
const excess = (ours: number, exact: number) => Math.abs(ours - exact) / (ATOL + RTOL * Math.abs(exact));
let model: Qwen2;

before(async () => {
  await initTestBackend();
  model = modelFromFolder(await smollm2Folder()).model;
});

/** The logits of one prompt at every position, [L * V]. */
function logitsOf(ids: number[]): Float32Array {
  const out = tf.tidy(() => model.forward(tf.tensor2d(ids, [1, ids.length], 'int32'), tf.ones([1, ids.length])));
  const data = out.dataSync() as Float32Array;
  out.dispose();
  return data;
}

test(`the model has transformers' ${expected.parameters} parameters, its head tied`, () => {
  assert.equal(countParams(model.config), expected.parameters);
  assert.equal(model.config.tie_word_embeddings, true);
});

test(`logits within ${ATOL} + ${RTOL} x |logit| of transformers' exact ones at every position of ${expected.prompts.length} prompts`, () => {
  const V = model.config.vocab_size;
  let worst = 0;
  let positions = 0;
  for (const p of expected.prompts) {
    const logits = logitsOf(p.ids);
    p.logits.forEach((row, pos) => {
      const off = pos * V;
      worst = Math.max(worst, excess(logSumExp(logits, off, V), row.logsumexp));
      expected.logit_indices.forEach((v, i) => {
        worst = Math.max(worst, excess(logits[off + v] as number, row.values[i] as number));
      });
      row.top_ids.forEach((v, i) => {
        worst = Math.max(worst, excess(logits[off + v] as number, row.top_values[i] as number));
      });
      let argmax = 0;
      for (let v = 1; v < V; v++) if ((logits[off + v] as number) > (logits[off + argmax] as number)) argmax = v;
      assert.equal(argmax, row.top_ids[0], `argmax at position ${pos} of ${JSON.stringify(p.text.slice(0, 40))}`);
      positions++;
    });
  }
  assert.ok(positions > 100, `${positions} positions compared`);
  assert.ok(worst <= 1, `largest difference ${worst} x the bound`);
});

test('32 greedy tokens identical to transformers for each prompt', () => {
  for (const p of expected.prompts) {
    const out = generate(model, [p.ids], { maxNewTokens: p.greedy.length, stopIds: [], doSample: false });
    assert.deepEqual(out.tokens[0], p.greedy, JSON.stringify(p.text.slice(0, 40)));
  }
});
