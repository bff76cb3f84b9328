/**
 * A LoRA run end to end through the real Temporal dev server and S3 server, with separate worker processes: its
 * checkpoints hold PEFT's adapter files only (kilobytes), each naming the warm start whose weights they apply to;
 * the base weights come back unchanged from every step; `starpo export` writes a PEFT folder with its base, or
 * the merged weights.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { exportCheckpoint } from '../../src/cli/export';
import { runInputFromFile } from '../../src/cli/run_input';
import { type StepMetrics, TASK_QUEUES } from '../../src/contract';
import { readCheckpoint } from '../../src/storage/checkpoint';
import { checkpointPrefix, metricsKey } from '../../src/storage/keys';
import { disposeCheckpoint, loadCheckpoint, trainerStateOf } from '../../src/storage/policy_checkpoint';
import { starpoTraining } from '../../src/workflows';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();

test('a LoRA run trains adapters only, stores them as PEFT files on its warm start, and exports them', async () => {
  const overrides = [
    '+actor_train.model_args.lora_target=all',
    '+actor_train.model_args.lora_rank=2',
    '+actor_train.model_args.additional_target=model.norm',
  ];
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', `it-lora-${Date.now()}`, overrides);
  const handle = await stack.client.workflow.start(starpoTraining, {
    taskQueue: TASK_QUEUES.control,
    workflowId: input.runId,
    args: [input],
  });
  const result = await handle.result();
  assert.equal(result.steps, 2);

  const names = async (step: number) => (await readCheckpoint(stack.store, `${checkpointPrefix(input.runId, step)}manifest.json`)).files;
  const step0 = await names(0);
  const final = await names(2);
  for (const files of [step0, final]) {
    assert.ok(files['adapter_model.safetensors'] && files['adapter_config.json'], 'PEFT adapter files');
    assert.equal(files['model.safetensors'], undefined, 'no full weights in an adapter checkpoint');
  }
  const base = trainerStateOf(final).base;
  assert.ok(base, 'the final checkpoint names its base');
  assert.deepEqual(trainerStateOf(step0).base, base, 'every step applies its adapters to the same warm start');
  const config = JSON.parse(new TextDecoder().decode(final['adapter_config.json']));
  assert.deepEqual([config.peft_type, config.r, config.lora_alpha, config.modules_to_save], ['LORA', 2, 4, ['model.norm']]);

  // The base weights are the warm start's, bit for bit; the adapters moved when a step had a gradient.
  const warm = await loadCheckpoint(stack.store, base);
  const trained = await loadCheckpoint(stack.store, result.finalCheckpoint);
  const first = await loadCheckpoint(stack.store, { ...(await stack.store.refOf(`${checkpointPrefix(input.runId, 0)}manifest.json`)) });
  try {
    for (const [name, t] of warm.model.toNamedTensors()) {
      assert.deepEqual(trained.model.toNamedTensors().get(name)?.dataSync(), t.dataSync(), `base weight ${name} untouched`);
    }
    const moved = [...(trained.model.adapters()?.variables() ?? [])].some(
      ([name, v]) => tf.tidy(() => tf.any(tf.notEqual(v, first.model.adapters()?.variables().get(name) as tf.Tensor)).dataSync()[0]) === 1,
    );
    const gradNorms = await Promise.all(
      [0, 1].map(async (s) => ((await stack.store.getJson(metricsKey(input.runId, s))) as StepMetrics).metrics['actor/grad_norm']),
    );
    assert.equal(
      moved,
      gradNorms.some((g) => (g as number) > 0),
      `adapters moved iff a step had a gradient (grad norms ${gradNorms})`,
    );
  } finally {
    for (const c of [warm, trained, first]) disposeCheckpoint(c);
  }

  const dir = mkdtempSync(join(tmpdir(), 'starpo-lora-export-'));
  try {
    const peft = await exportCheckpoint(stack.store, input.runId, { to: join(dir, 'peft'), log: () => undefined });
    assert.deepEqual(
      peft.files.map((f) => f.name).filter((n) => !n.startsWith('base/')),
      ['adapter_config.json', 'adapter_model.safetensors'],
    );
    const exported = JSON.parse(readFileSync(join(dir, 'peft', 'adapter_config.json'), 'utf8'));
    assert.equal(exported.base_model_name_or_path, join(dir, 'peft', 'base'));
    assert.ok(existsSync(join(dir, 'peft', 'base', 'model.safetensors')), 'the base HF folder beside the adapters');
    const merged = await exportCheckpoint(stack.store, input.runId, { to: join(dir, 'merged'), merge: true, log: () => undefined });
    assert.ok(merged.files.some((f) => f.name === 'model.safetensors'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
