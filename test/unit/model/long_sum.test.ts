/**
 * Sums over a vocabulary-long axis hold float32's precision: sumLastAxis, logSoftmaxLastAxis (and its gradient)
 * and matMulLongInner at Qwen2.5's 151,936 ids against the same sums in float64, where wasm's own Sum and
 * XNNPACK's matmul drift. Runs on the test backend (wasm; STARPO_BACKEND=tensorflow for native).
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { logSoftmaxLastAxis, matMulLongInner, sumAll, sumLastAxis } from '../../../src/model/long_sum';
import { Rng } from '../../../src/util/rng';
import { initTestBackend } from '../../helpers/backend';

const V = 151936;
const N = 3;
/** float32 rounding of one value and of sums that never chain more than a few thousand adds. */
const TOL = 2e-6;

before(async () => {
  await initTestBackend();
});

/** N x V logits of a language model's spread: normal with std 3, seeded. */
function logits(seed: number): Float32Array {
  const rng = new Rng(seed, 'long-sum');
  return Float32Array.from({ length: N * V }, () => 3 * rng.normal());
}

/** The largest |got - want| relative to the largest |want|. */
function relErr(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let [worst, scale] = [0, 0];
  for (let i = 0; i < want.length; i++) {
    worst = Math.max(worst, Math.abs(got[i] - want[i]));
    scale = Math.max(scale, Math.abs(want[i]));
  }
  return worst / scale;
}

/** Row sums of an N x V array, in float64. */
function rowSums64(x: ArrayLike<number>): number[] {
  return Array.from({ length: N }, (_, n) => {
    let s = 0;
    for (let v = 0; v < V; v++) s += x[n * V + v];
    return s;
  });
}

test('sumLastAxis and sumAll of positive values over 151,936 ids are the float64 sums to float32 precision', () => {
  const x = logits(1).map(Math.exp);
  const want = rowSums64(x);
  const t = tf.tensor2d(x, [N, V]);
  assert.ok(relErr(sumLastAxis(t).dataSync(), want) < TOL, `sumLastAxis: ${relErr(sumLastAxis(t).dataSync(), want)}`);
  assert.deepEqual(sumLastAxis(t, true).shape, [N, 1]);
  const all = want.reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(sumAll(t).dataSync()[0] - all) / all < TOL, 'sumAll');
  tf.dispose(t);
});

test("logSoftmaxLastAxis over 151,936 ids and its gradient dy - softmax * sum(dy) are float64's to float32 precision", () => {
  const x = logits(2);
  const dy = logits(3);
  const lse = Array.from({ length: N }, (_, n) => {
    let max = -Infinity;
    for (let v = 0; v < V; v++) max = Math.max(max, x[n * V + v]);
    let s = 0;
    for (let v = 0; v < V; v++) s += Math.exp(x[n * V + v] - max);
    return max + Math.log(s);
  });
  const want = x.map((xi, i) => xi - lse[Math.floor(i / V)]);
  const dySums = rowSums64(dy);
  const wantGrad = dy.map((d, i) => d - Math.exp(want[i]) * dySums[Math.floor(i / V)]);
  const t = tf.tensor2d(x, [N, V]);
  const got = tf.tidy(() => logSoftmaxLastAxis(t));
  assert.ok(relErr(got.dataSync(), want) < TOL, `log-softmax: ${relErr(got.dataSync(), want)}`);
  const grad = tf.grad((a: tf.Tensor) => tf.sum(tf.mul(logSoftmaxLastAxis(a), tf.tensor2d(dy, [N, V]))))(t);
  assert.ok(relErr(grad.dataSync(), wantGrad) < TOL, `gradient: ${relErr(grad.dataSync(), wantGrad)}`);
  tf.dispose([t, got, grad]);
});

test('matMulLongInner of [3, 151936] @ [151936, 8] is the float64 product to float32 precision', () => {
  const E = 8;
  const a = logits(4);
  const rng = new Rng(5, 'long-sum');
  const b = Float32Array.from({ length: V * E }, () => rng.normal() * 0.02);
  const want = Array.from({ length: N * E }, (_, i) => {
    const [n, e] = [Math.floor(i / E), i % E];
    let s = 0;
    for (let v = 0; v < V; v++) s += a[n * V + v] * b[v * E + e];
    return s;
  });
  const got = tf.tidy(() => matMulLongInner(tf.tensor2d(a, [N, V]), tf.tensor2d(b, [V, E])));
  assert.deepEqual(got.shape, [N, E]);
  assert.ok(relErr(got.dataSync(), want) < TOL, `product: ${relErr(got.dataSync(), want)}`);
  got.dispose();
});
