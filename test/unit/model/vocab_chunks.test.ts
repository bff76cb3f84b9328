/**
 * The vocabulary work in chunks of tokens (logprobs.ts headLogProbs through tokenLogProbs): the same log-probs,
 * entropies, loss and weight gradients as the unchunked formulation (lm_head on every row, then
 * logProbAndEntropy), and no [tokens, vocabulary] tensor larger than one chunk in the forward or the backward pass.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { tinyPreset } from '../../../src/model/config';
import { linear } from '../../../src/model/kernels';
import { headLogProbs, logProbAndEntropy, tokenLogProbs } from '../../../src/model/logprobs';
import { Qwen2 } from '../../../src/model/qwen2';
import { initTestBackend } from '../../helpers/backend';
import { relDiff } from '../../helpers/tensor_diff';

before(async () => {
  await initTestBackend();
});

const V = 500;

/** Rows of lengths 11, 6 and 9 right-padded to 11; the response mask `at` covers the later tokens of each row. */
function batch(): { ids: tf.Tensor2D; mask: tf.Tensor2D; at: tf.Tensor2D } {
  const lengths = [11, 6, 9];
  const rows = lengths.map((n, b) => Array.from({ length: 11 }, (_, t) => (t < n ? 1 + ((t * 37 + b * 101) % (V - 1)) : 0)));
  const mask = rows.map((r, b) => r.map((_, t) => (t < lengths[b] ? 1 : 0)));
  const at = lengths.map((n) => Array.from({ length: 10 }, (_, t) => (t >= 2 && t + 1 < n ? 1 : 0)));
  return { ids: tf.tensor2d(rows, [3, 11], 'int32'), mask: tf.tensor2d(mask, [3, 11]), at: tf.tensor2d(at, [3, 10]) };
}

/** The unchunked formulation: logits of every position, then logProbAndEntropy. */
function unchunked(m: Qwen2, ids: tf.Tensor2D, mask: tf.Tensor2D, entropyGradient: boolean): { logp: tf.Tensor2D; entropy: tf.Tensor2D } {
  const [B, L] = ids.shape;
  return tf.tidy(() => {
    const logits = tf.reshape(tf.slice(m.forward(ids, mask), [0, 0, 0], [B, L - 1, V]), [B * (L - 1), V]) as tf.Tensor2D;
    const targets = tf.reshape(tf.slice(ids, [0, 1], [B, L - 1]), [B * (L - 1)]) as tf.Tensor1D;
    const [logp, entropy] = tf.unstack(logProbAndEntropy(logits, targets, entropyGradient), 1);
    return { logp: tf.reshape(logp, [B, L - 1]) as tf.Tensor2D, entropy: tf.reshape(entropy, [B, L - 1]) as tf.Tensor2D };
  });
}

for (const tied of [true, false]) {
  test(`chunks of 4 tokens equal the unchunked vocabulary work: log-probs, entropies, loss, every gradient (${tied ? 'tied' : 'untied'} lm_head)`, (t) => {
    const m = Qwen2.random({ ...tinyPreset(V), tie_word_embeddings: tied }, 31);
    const { ids, mask, at } = batch();
    const vars = [...m.trainableVariables().values()];
    const lines: string[] = [];
    for (const entropyGradient of [true, false]) {
      for (const masked of [true, false]) {
        const w = masked ? at : tf.slice(mask, [0, 1], [3, 10]);
        const lossOf = (f: () => { logp: tf.Tensor2D; entropy: tf.Tensor2D }) => () => {
          const { logp, entropy } = f();
          return tf.sum(tf.mul(tf.sub(tf.mul(logp, 0.7), tf.mul(entropy, 0.3)), w)) as tf.Scalar;
        };
        const chunked = () => tokenLogProbs(m, ids, mask, { at: masked ? at : undefined, entropyGradient, vocabChunk: 4 });
        const got = tf.variableGrads(lossOf(chunked), vars);
        const want = tf.variableGrads(
          lossOf(() => unchunked(m, ids, mask, entropyGradient)),
          vars,
        );
        const a = chunked();
        const b = unchunked(m, ids, mask, entropyGradient);
        const values = Math.max(relDiff(tf.mul(a.logp, w), tf.mul(b.logp, w)), relDiff(tf.mul(a.entropy, w), tf.mul(b.entropy, w)));
        assert.ok(values <= 1e-6, `log-probs / entropies differ by ${values}`);
        assert.ok(relDiff(got.value, want.value) <= 1e-6, `loss ${got.value.dataSync()[0]} vs ${want.value.dataSync()[0]}`);
        let worst = 0;
        for (const v of vars) {
          const d = relDiff(got.grads[v.name], want.grads[v.name]);
          assert.ok(d <= 1e-5, `${v.name}: gradients differ by ${d} of the largest entry`);
          worst = Math.max(worst, d);
        }
        lines.push(
          `entropy gradient ${entropyGradient}, ${masked ? 'at' : 'all'}: values ${values.toExponential(1)}, grads ${worst.toExponential(1)}`,
        );
        if (masked) {
          const off = tf.mul(a.logp, tf.sub(1, at));
          assert.equal(tf.max(tf.abs(off)).dataSync()[0], 0, 'zeros off the used positions');
        }
        tf.dispose([
          got.value,
          want.value,
          ...Object.values(got.grads),
          ...Object.values(want.grads),
          a.logp,
          a.entropy,
          b.logp,
          b.entropy,
        ]);
      }
    }
    t.diagnostic(`${tf.getBackend()}: ${lines.join('; ')}`);
    tf.dispose([ids, mask, at]);
    m.dispose();
  });
}

/**
 * The most rows of a [rows, V] tensor any kernel outputs, leaving out rows = E (a weight or its transpose) and
 * rows = B * L (the embedding's one-hot on wasm, kernels.ts embedLookup, spans all input positions; the vocabulary
 * work reads only the L - 1 shifted ones).
 */
function largestTokenVocabRows(kernels: Array<{ outputShapes: number[][] }>, E: number, inputPositions: number): number {
  let most = 0;
  for (const k of kernels) {
    for (const shape of k.outputShapes) {
      if (shape.length < 2 || !shape.includes(V)) continue;
      const rows = shape.reduce((p, d) => p * d, 1) / V;
      if (rows !== E && rows !== inputPositions) most = Math.max(most, rows);
    }
  }
  return most;
}

/**
 * The formulation before chunking, at the used positions: lm_head (kernels.ts linear) on their rows, then
 * logProbAndEntropy; placed back at their [B, L - 1] positions (zeros elsewhere), so the loss sums the same tensor
 * shape as tokenLogProbs's (a vectorized sum of another length adds in another order: not bit for bit on every CPU).
 */
function beforeChunking(m: Qwen2, ids: tf.Tensor2D, mask: tf.Tensor2D, at: tf.Tensor2D): tf.Tensor2D {
  const [B, L] = ids.shape;
  const a = at.dataSync();
  const idData = ids.dataSync();
  const rows: number[] = [];
  const targets: number[] = [];
  // each [b, t] cell's index among the used positions, or -1 (a row of zeros in the placement)
  const cells: number[] = [];
  for (let b = 0; b < B; b++)
    for (let t = 0; t < L - 1; t++)
      if (a[b * (L - 1) + t]) {
        cells.push(rows.length);
        rows.push(b * L + t);
        targets.push(idData[b * L + t + 1]);
      } else cells.push(-1);
  return tf.tidy(() => {
    const { w, wT } = m.lmHead();
    const logits = linear(m.hiddenAt(ids, mask, rows), w, undefined, wT);
    const [logp, entropy] = tf.unstack(logProbAndEntropy(logits, tf.tensor1d(targets, 'int32')), 1);
    // a one-hot placement matmul: each cell is 1 x its value plus zeros, exact, and differentiable on every backend
    const place = tf.cast(tf.oneHot(tf.tensor1d(cells, 'int32'), rows.length), 'float32');
    const values = tf.reshape(tf.sub(logp, tf.mul(entropy, 0.3)), [rows.length, 1]);
    return tf.reshape(tf.matMul(place, values), [B, L - 1]) as tf.Tensor2D;
  });
}

test('one chunk (the default chunk above the positions used) computes exactly the numbers of the formulation before chunking', (t) => {
  const m = Qwen2.random(tinyPreset(V), 33);
  const { ids, mask, at } = batch();
  const vars = [...m.trainableVariables().values()];
  const got = tf.variableGrads(() => {
    const { logp, entropy } = tokenLogProbs(m, ids, mask, { at });
    return tf.sum(tf.mul(tf.sub(logp, tf.mul(entropy, 0.3)), at)) as tf.Scalar;
  }, vars);
  const want = tf.variableGrads(() => tf.sum(tf.mul(beforeChunking(m, ids, mask, at), at)) as tf.Scalar, vars);
  assert.equal(got.value.dataSync()[0], want.value.dataSync()[0]);
  for (const v of vars) assert.deepEqual(got.grads[v.name].dataSync(), want.grads[v.name].dataSync(), v.name);
  t.diagnostic(`${tf.getBackend()}: loss and gradients bit for bit`);
  tf.dispose([got.value, want.value, ...Object.values(got.grads), ...Object.values(want.grads), ids, mask, at]);
  m.dispose();
});

test('no [tokens, vocabulary] tensor larger than one chunk exists in the forward or the backward pass', async (t) => {
  const cfg = tinyPreset(V);
  const m = Qwen2.random(cfg, 32);
  const { ids, mask, at } = batch();
  const vars = [...m.trainableVariables().values()];
  const rowsAt = async (vocabChunk: number, masked: boolean) => {
    const info = await tf.profile(() => {
      const { value, grads } = tf.variableGrads(
        () => tf.sum(tokenLogProbs(m, ids, mask, { at: masked ? at : undefined, vocabChunk }).logp) as tf.Scalar,
        vars,
      );
      tf.dispose([value, ...Object.values(grads)]);
    });
    return largestTokenVocabRows(info.kernels, cfg.hidden_size, ids.size);
  };
  const used = at.sum().dataSync()[0];
  const unchunkedRows = await rowsAt(1000, true);
  assert.equal(unchunkedRows, used, 'one chunk: the used positions make one [M, V] block (the check sees it)');
  for (const chunk of [4, 5]) {
    assert.ok((await rowsAt(chunk, true)) <= chunk, `chunks of ${chunk} at the used positions`);
    assert.ok((await rowsAt(chunk, false)) <= chunk, `chunks of ${chunk} at every position`);
  }
  t.diagnostic(`${tf.getBackend()}: ${used} used positions in one chunk; at most 4 and 5 rows with chunks of 4 and 5`);
  tf.dispose([ids, mask, at]);
  m.dispose();
});

test('chunks bound the peak of the vocabulary work (headLogProbs, many tokens, a narrow lm_head)', async (t) => {
  const M = 400;
  const E = 16;
  const h = tf.variable(tf.randomNormal([M, E], 0, 1, 'float32', 1), true, 'chunk-peak-h');
  const w = tf.variable(tf.randomNormal([V, E], 0, 0.1, 'float32', 2), true, 'chunk-peak-w');
  const targets = Array.from({ length: M }, (_, i) => (i * 37) % V);
  const peak = async (chunk: number) => {
    const start = tf.memory().numBytes;
    const info = await tf.profile(() => {
      const { value, grads } = tf.variableGrads(
        () => tf.sum(headLogProbs(h as tf.Variable<tf.Rank.R2>, w as tf.Variable<tf.Rank.R2>, targets, { chunk })) as tf.Scalar,
        [h, w],
      );
      tf.dispose([value, ...Object.values(grads)]);
    });
    return info.peakBytes - start;
  };
  const whole = await peak(M);
  const chunked = await peak(8);
  const block = M * V * 4;
  t.diagnostic(
    `${tf.getBackend()}: peak ${(whole / block).toFixed(1)} [M, V] blocks in one chunk, ${(chunked / block).toFixed(2)} in chunks of 8`,
  );
  assert.ok(chunked < 0.1 * whole, `chunks of 8: ${chunked} bytes at the peak; one chunk: ${whole}`);
  tf.dispose([h, w]);
});
