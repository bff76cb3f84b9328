/**
 * Fidelity to Hugging Face transformers on models it made (test/fixtures/hf, make_fixtures.py): tiny random
 * Qwen2 and Llama folders with the real Qwen2.5 tokenizer, in both config.json spellings, fp32 / bf16 / fp16,
 * tied and untied, GQA and MHA, sharded, Llama with and without biases. starpo's logits must be within 1e-4
 * of transformers' and its greedy tokens identical, each prompt alone and all prompts batched.
 */

import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { generate } from '../../../src/model/generate';
import { pretrainedProblems } from '../../../src/model/hf/folder';
import { modelFromFolder } from '../../../src/model/hf/weights';
import type { Qwen2 } from '../../../src/model/qwen2';
import { logSumExp } from '../../../src/model/sampling';
import { initTestBackend } from '../../helpers/backend';
import { type HfExpected, hfExpected, hfVariants, materializeHfVariant, removeHfFolder } from '../../helpers/hf_models';

const TOL = 1e-4;

before(async () => {
  await initTestBackend();
});

/** Logits of right-padded rows (training forward), per row [L_i * V]. */
function forwardRows(model: Qwen2, rows: number[][]): Float32Array[] {
  const L = Math.max(...rows.map((r) => r.length));
  const ids = rows.flatMap((r) => [...r, ...new Array<number>(L - r.length).fill(0)]);
  const mask = rows.flatMap((r) => [...new Array<number>(r.length).fill(1), ...new Array<number>(L - r.length).fill(0)]);
  const logits = tf.tidy(() => model.forward(tf.tensor2d(ids, [rows.length, L], 'int32'), tf.tensor2d(mask, [rows.length, L])));
  const all = logits.dataSync() as Float32Array;
  logits.dispose();
  const V = model.config.vocab_size;
  return rows.map((r, b) => all.subarray(b * L * V, (b * L + r.length) * V));
}

type LogitRow = HfExpected['logits'][number];

/** The largest |starpo - transformers| of one expected logit row (its values and logsumexp). */
function rowDiff(expected: HfExpected, row: LogitRow, logits: Float32Array[], V: number): number {
  const off = row.position * V;
  const at = logits[row.prompt];
  let worst = Math.abs(logSumExp(at, off, V) - row.logsumexp);
  expected.logit_indices.forEach((v, i) => (worst = Math.max(worst, Math.abs(at[off + v] - row.values[i]))));
  return worst;
}

/** The largest rowDiff over every expected row; each row's argmax must agree. */
function maxLogitDiff(expected: HfExpected, logits: Float32Array[], V: number): number {
  let worst = 0;
  for (const row of expected.logits) {
    const off = row.position * V;
    const at = logits[row.prompt];
    let argmax = 0;
    for (let v = 1; v < V; v++) if (at[off + v] > at[off + argmax]) argmax = v;
    assert.equal(argmax, row.argmax, `argmax of prompt ${row.prompt} at ${row.position}`);
    worst = Math.max(worst, rowDiff(expected, row, logits, V));
  }
  return worst;
}

for (const variant of hfVariants()) {
  test(`${variant}: logits within ${TOL} of transformers and greedy tokens identical, alone and batched`, (t) => {
    const expected = hfExpected(variant);
    const dir = materializeHfVariant(variant);
    try {
      assert.deepEqual(pretrainedProblems(dir, 64), []);
      const { model, tokenizer } = modelFromFolder(dir);
      try {
        const prompts = expected.prompts.map((p) => p.ids);
        for (const p of expected.prompts) assert.deepEqual(tokenizer.encode(p.text), p.ids, p.text);
        const V = model.config.vocab_size;
        const alone = maxLogitDiff(
          expected,
          prompts.map((ids) => forwardRows(model, [ids])[0]),
          V,
        );
        const batched = maxLogitDiff(expected, forwardRows(model, prompts), V);
        t.diagnostic(`max |logit - transformers|: alone ${alone.toExponential(2)}, batched ${batched.toExponential(2)}`);
        assert.ok(alone <= TOL && batched <= TOL, `max |logit diff| alone ${alone}, batched ${batched}`);

        const greedy = { maxNewTokens: expected.greedy.max_new_tokens, stopIds: [], doSample: false };
        assert.deepEqual(
          prompts.map((ids) => generate(model, [ids], greedy).tokens[0]),
          expected.greedy.alone,
        );
        assert.deepEqual(generate(model, prompts, greedy).tokens, expected.greedy.batched);
      } finally {
        model.dispose();
      }
    } finally {
      removeHfFolder(dir);
    }
  });
}

test('the fixtures catch a wrong rope_theta: the same weights with theta 10000 are far from transformers', () => {
  const variant = 'tied_gqa';
  const expected = hfExpected(variant);
  const dir = materializeHfVariant(variant);
  try {
    const file = join(dir, 'config.json');
    const config = JSON.parse(readFileSync(file, 'utf8'));
    assert.equal(config.rope_parameters.rope_theta, 1e6);
    delete config.rope_parameters;
    writeFileSync(file, JSON.stringify(config));
    const { model } = modelFromFolder(dir);
    try {
      assert.equal(model.config.rope_theta, 10000);
      const V = model.config.vocab_size;
      const logits = expected.prompts.map((p) => forwardRows(model, [p.ids])[0]);
      for (const row of expected.logits) {
        const diff = rowDiff(expected, row, logits, V);
        // position 0 has no rotation; every later one is rotated by the wrong angles
        if (row.position === 0) assert.ok(diff <= TOL, `prompt ${row.prompt} position 0: ${diff}`);
        else assert.ok(diff > 0.01, `prompt ${row.prompt} position ${row.position}: theta 10000 within ${diff} of transformers`);
      }
    } finally {
      model.dispose();
    }
  } finally {
    removeHfFolder(dir);
  }
});
