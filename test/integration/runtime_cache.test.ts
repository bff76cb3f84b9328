/**
 * The activity runtime's one-entry checkpoint cache against a real S3 server: a worker that moves on to another
 * checkpoint (the next run, a replay) frees the cached policy before it loads the new one, so it never holds two
 * (at Qwen2.5-0.5B, weights and AdamW moments are 6 GB each). tf.profile's peakBytes is the engine's largest
 * tensor footprint while the load ran. A LoRA run's next checkpoint on the same base keeps the cached model.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { ActivityRuntime } from '../../src/activities/runtime';
import type { ObjectRef } from '../../src/contract';
import { tinyPreset } from '../../src/model/config';
import { LoraAdapters } from '../../src/model/lora';
import { Qwen2 } from '../../src/model/qwen2';
import { charTokenizer } from '../../src/model/tokenizer';
import { ObjectStore } from '../../src/storage/object_store';
import { disposeCheckpoint, loadCheckpoint, type PolicyCheckpoint, saveCheckpoint } from '../../src/storage/policy_checkpoint';
import { initTestBackend } from '../helpers/backend';
import { startTestServers, type TestServers } from '../helpers/servers';

let servers: TestServers;
let store: ObjectStore;

before(async () => {
  await initTestBackend();
  servers = await startTestServers();
  store = new ObjectStore(servers.endpoints.s3);
  await store.ensureBucket();
});
after(async () => {
  await servers?.stop();
});

async function savePolicy(name: string, seed: number): Promise<ObjectRef> {
  const tokenizer = charTokenizer();
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), seed);
  try {
    return await saveCheckpoint(store, `runs/cache-${process.pid}/${name}/`, {
      model,
      tokenizer,
      optimizer: null,
      state: { step: 0, betas: [0.9, 0.999], weightDecay: 0, metrics: {} },
    });
  } finally {
    model.dispose();
  }
}

/** The engine's peak bytes while `runtime` takes `ref`, and what it took. */
async function peakOfTake(runtime: ActivityRuntime, ref: ObjectRef): Promise<{ peak: number; taken: PolicyCheckpoint }> {
  let taken: PolicyCheckpoint | null = null;
  const info = await tf.profile(async () => {
    taken = await runtime.take(ref);
    return undefined;
  });
  return { peak: info.peakBytes, taken: taken as unknown as PolicyCheckpoint };
}

test('a cache miss frees the cached policy before loading: the peak is that of a load with nothing cached', async () => {
  const [a, b] = [await savePolicy('a', 1), await savePolicy('b', 2)];
  const fresh = await peakOfTake(new ActivityRuntime(store), b);
  disposeCheckpoint(fresh.taken);

  const runtime = new ActivityRuntime(store);
  const cached = await runtime.take(a);
  runtime.keep(a, cached);
  const held = tf.memory().numBytes;
  const moved = await peakOfTake(runtime, b);
  try {
    assert.ok(held > 0);
    assert.ok(
      [...cached.model.trainableVariables().values()].every((v) => v.isDisposed),
      'the cached policy is freed when another is taken',
    );
    assert.ok(moved.peak <= fresh.peak, `peak ${moved.peak} B with a policy cached vs ${fresh.peak} B with none`);
  } finally {
    disposeCheckpoint(moved.taken);
  }
});

test('a cache hit hands over the cached policy without loading', async () => {
  const a = await savePolicy('hit', 3);
  const runtime = new ActivityRuntime(store);
  const first = await runtime.take(a);
  runtime.keep(a, first);
  const again = await runtime.take(a);
  try {
    assert.equal(again, first);
    assert.ok([...again.model.trainableVariables().values()].every((v) => !v.isDisposed));
  } finally {
    disposeCheckpoint(again);
  }
});

test("a LoRA run's next checkpoint on the cached base reuses the cached model and reads only the adapters", async () => {
  const base = await savePolicy('lora-base', 3);
  const settings = { target: { kind: 'names' as const, names: ['q_proj', 'v_proj'] }, rank: 2, alpha: 4, dropout: 0, additional: [] };
  /** An adapter checkpoint on `base` whose B holds `fill` (non-zero, so the two steps differ). */
  const saveAdapters = async (name: string, fill: number) => {
    const c = await loadCheckpoint(store, base);
    try {
      const adapters = LoraAdapters.init(c.model.config, settings, 1, () => assert.fail('no additional target'));
      for (const [n, v] of adapters.variables()) if (n.endsWith('lora_B.weight')) v.assign(tf.fill(v.shape, fill));
      c.model.setAdapters(adapters);
      return await saveCheckpoint(store, `runs/cache-${process.pid}/${name}/`, { ...c, state: { ...c.state, step: 1, base } });
    } finally {
      disposeCheckpoint(c);
    }
  };
  const [first, second] = [await saveAdapters('lora-1', 0.01), await saveAdapters('lora-2', 0.02)];
  const runtime = new ActivityRuntime(store);
  const one = await runtime.take(first);
  const baseWeights = [...one.model.toNamedTensors().values()];
  const firstAdapters = [...(one.model.adapters()?.variables().values() ?? [])];
  runtime.keep(first, one);
  const two = await runtime.take(second);
  try {
    assert.equal(two.model, one.model, 'the same model object: the base was not read again');
    assert.ok(
      baseWeights.every((w) => !w.isDisposed),
      'the base weights stay',
    );
    assert.ok(
      firstAdapters.every((v) => v.isDisposed),
      "the first checkpoint's adapters are freed",
    );
    const b = two.model.adapters()?.variables().get('model.layers.0.self_attn.q_proj.lora_B.weight') as tf.Tensor;
    assert.ok(Math.abs(b.dataSync()[0] - 0.02) < 1e-7, "the second checkpoint's adapters are on");
  } finally {
    disposeCheckpoint(two);
  }
});
