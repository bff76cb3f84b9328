import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { FusedWeights, fusedLinear } from '../../../src/model/kernels';
import { Rng } from '../../../src/util/rng';
import { initTestBackend } from '../../helpers/backend';

before(async () => {
  await initTestBackend();
});

function random(shape: number[], seed: number): tf.Tensor {
  const rng = new Rng(seed, 'fused-linear');
  return tf.tensor(
    Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rng.normal()),
    shape,
  );
}

function close(a: tf.Tensor, b: tf.Tensor, what: string): void {
  const x = a.dataSync();
  const y = b.dataSync();
  assert.equal(x.length, y.length, what);
  x.forEach((v, i) => assert.ok(Math.abs(v - y[i]) <= 1e-5 * Math.max(1, Math.abs(y[i])), `${what}[${i}]: ${v} vs ${y[i]}`));
}

test('fusedLinear equals the separate linear layers, in value and in the gradient of x, every weight and every bias', () => {
  const x = random([5, 6], 1) as tf.Tensor2D;
  const ws = [random([4, 6], 2), random([2, 6], 3), random([3, 6], 4)] as tf.Tensor2D[];
  const bs = [random([4], 5), random([2], 6), random([3], 7)] as tf.Tensor1D[];
  const upstream = random([5, 9], 8);
  const fused = new FusedWeights();
  const separate = (xi: tf.Tensor2D, w: tf.Tensor2D[], b: tf.Tensor1D[]) =>
    tf.concat(
      w.map((wi, i) => tf.add(tf.matMul(xi, wi, false, true), b[i])),
      1,
    );
  const viaFused = (xi: tf.Tensor2D, w: tf.Tensor2D[], b: tf.Tensor1D[]) => {
    const { stacked, bias } = fused.of('qkv', w, b);
    return fusedLinear(xi, w, stacked, b, bias);
  };
  close(viaFused(x, ws, bs), separate(x, ws, bs), 'value');
  const grad = (f: typeof separate) =>
    tf.grads((...a: tf.Tensor[]) =>
      tf.sum(tf.mul(f(a[0] as tf.Tensor2D, a.slice(1, 4) as tf.Tensor2D[], a.slice(4) as tf.Tensor1D[]), upstream)),
    )([x, ...ws, ...bs]);
  const want = grad(separate);
  const got = grad(viaFused);
  got.forEach((g, i) => close(g, want[i], `gradient ${i}`));
  // A changed weight (an optimizer step swaps its data) rebuilds the stack.
  const changed = [tf.mul(ws[0], 2) as tf.Tensor2D, ws[1], ws[2]];
  close(viaFused(x, changed, bs), separate(x, changed, bs), 'value after a change');
  fused.dispose();
});
