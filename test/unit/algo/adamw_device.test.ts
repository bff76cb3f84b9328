/**
 * The optimizer step stays on the backend that holds the weights: between the summed gradients and the updated
 * weights, the only tensor data that crosses to or from the host is scalar (the loss, the gradient norm, the
 * step's hyper-parameters). Counted at the backend itself (its read, readSync and write), which every dataSync,
 * data, arraySync and tensor upload goes through, on real weights of the tiny model and real gradients.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { AdamW, clipByGlobalNorm } from '../../../src/algo/adamw';
import { optimizerStep } from '../../../src/algo/grad_step';
import { tinyPreset } from '../../../src/model/config';
import { Qwen2 } from '../../../src/model/qwen2';
import { charTokenizer } from '../../../src/model/tokenizer';
import { momentsOf } from '../../helpers/adamw_moments';
import { initTestBackend } from '../../helpers/backend';

before(async () => {
  await initTestBackend();
});

interface Transfers {
  /** Element counts of each read from the backend to the host. */
  reads: number[];
  /** Element counts of each upload from the host to the backend. */
  writes: number[];
}

/** Runs f with the active backend's read, readSync and write counted. */
async function countTransfers(f: () => void | Promise<void>): Promise<Transfers> {
  type Method = (...a: unknown[]) => unknown;
  const backend = tf.backend() as unknown as Record<'read' | 'readSync' | 'write', Method>;
  const names = ['read', 'readSync', 'write'] as const;
  const own = Object.fromEntries(names.map((k) => [k, backend[k]])) as Record<(typeof names)[number], Method>;
  const shadowed = names.filter((k) => Object.hasOwn(backend, k));
  const out: Transfers = { reads: [], writes: [] };
  const size = (x: unknown) => (x as ArrayLike<unknown>).length;
  backend.readSync = (...a) => {
    const values = own.readSync.apply(backend, a);
    out.reads.push(size(values));
    return values;
  };
  // Some backends' read calls their readSync: that is one read.
  backend.read = async (...a) => {
    const n = out.reads.length;
    const values = await own.read.apply(backend, a);
    out.reads.length = n;
    out.reads.push(size(values));
    return values;
  };
  backend.write = (...a) => {
    if (a[0] != null) out.writes.push(size(a[0])); // wasm allocates a kernel's output by a write of no values
    return own.write.apply(backend, a);
  };
  try {
    await f();
  } finally {
    for (const k of names) {
      if (shadowed.includes(k)) backend[k] = own[k];
      else delete (backend as Partial<typeof backend>)[k];
    }
  }
  return out;
}

/**
 * Every upload at most SMALL values: the step's scalars, and on native TensorFlow the axes or shape an op takes
 * as a small int32 tensor. The smallest weight of the tiny model has 32 values.
 */
const SMALL = 4;
function assertSmall(sizes: number[], what: string): void {
  assert.ok(
    sizes.every((n) => n <= SMALL),
    `${what} of ${JSON.stringify(sizes.filter((n) => n > SMALL))} values`,
  );
}

/** The tiny model's weights and the gradient of a loss over all of them (not the optimizer's concern how it is made). */
function weightsAndGrads(seed: number): { model: Qwen2; vars: Map<string, tf.Variable>; grads: Map<string, tf.Tensor> } {
  const model = Qwen2.random(tinyPreset(charTokenizer().vocabSize), seed);
  const vars = model.trainableVariables();
  const { value, grads } = tf.variableGrads(() => wavyLoss(vars), [...vars.values()]);
  value.dispose();
  const byTfName = new Map([...vars].map(([name, v]) => [v.name, name]));
  return { model, vars, grads: new Map(Object.entries(grads).map(([k, g]) => [byTfName.get(k)!, g])) };
}

/**
 * sum over weights of sin(3 w) . w: a loss whose gradient has both signs and a norm over 1. The dot products are
 * matmuls because tfjs's gradient of tf.sum uploads a host-made tensor of ones the size of its input, which would
 * be counted here although it belongs to the backward, not to the optimizer.
 */
function wavyLoss(vars: Map<string, tf.Variable>): tf.Scalar {
  const dot = (v: tf.Variable) => tf.matMul(tf.reshape(tf.sin(tf.mul(v, 3)), [1, v.size]), tf.reshape(v, [v.size, 1]));
  return tf.reshape(tf.addN([...vars.values()].map(dot)), []) as tf.Scalar;
}

test('clip and AdamW steps read and write only scalars; the moments replace each other (no tensor left behind)', async () => {
  const { model, vars, grads } = weightsAndGrads(4);
  assert.ok(Math.min(...[...vars.values()].map((v) => v.size)) > SMALL);
  const optimizer = new AdamW({ weightDecay: 0.1, params: vars });
  const counts: number[] = [];
  for (let step = 0; step < 3; step++) {
    const t = await countTransfers(() => {
      const { norm, scale } = clipByGlobalNorm(grads, 1);
      assert.ok(norm > 1 && scale < 1, `the clip is active: norm ${norm}`);
      optimizer.applyGradients(grads, 1e-3, undefined, scale);
    });
    assert.deepEqual(t.reads, [1], `step ${step + 1}: one read, the norm`);
    assertSmall(t.writes, `step ${step + 1}: uploads`);
    counts.push(tf.memory().numTensors);
  }
  assert.equal(counts[2], counts[1], 'a later step holds as many tensors as the one before');
  assert.equal((await momentsOf(optimizer)).size, vars.size);
  tf.dispose([...grads.values()]);
  optimizer.dispose();
  model.dispose();
});

test('optimizerStep: accumulating two micro-batches, clipping and AdamW read only the losses and the norm', async () => {
  const model = Qwen2.random(tinyPreset(charTokenizer().vocabSize), 5);
  const vars = model.trainableVariables();
  const optimizer = new AdamW({ weightDecay: 0.1 });
  const before = tf.memory().numTensors;
  const before0 = (vars.get('model.norm.weight') as tf.Variable).dataSync().slice();
  // Not a token batch: its rows x tokens only name it in an out-of-memory error.
  const half = { rows: 1, tokens: 1, loss: () => tf.mul(wavyLoss(vars), 0.5) as tf.Scalar };
  let result: Awaited<ReturnType<typeof optimizerStep>> | undefined;
  const t = await countTransfers(async () => {
    result = await optimizerStep({ vars, optimizer, lossFns: [half, half], lr: 1e-3, maxGradNorm: 1 });
  });
  assert.equal(result?.applied, true);
  assert.deepEqual(t.reads, [1, 1, 1], 'the two micro-batch losses and the norm');
  assertSmall(t.writes, 'uploads');
  assert.notDeepEqual((vars.get('model.norm.weight') as tf.Variable).dataSync(), before0, 'the weights moved');
  // What stays is the optimizer's state: two moments per weight. The summed gradients are gone.
  assert.equal(tf.memory().numTensors, before + 2 * vars.size);
  optimizer.dispose();
  model.dispose();
});
