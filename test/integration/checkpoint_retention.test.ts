/**
 * save_steps and max_ckpt_to_keep through the real servers and workers: after a short run, every step's
 * weights are in the store, and optimizer states only for the newest step, the one before it and the
 * newest max_ckpt_to_keep full checkpoints; what a resume or a replay continues from is still there.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runInputFromFile } from '../../src/cli/run_input';
import type { StarpoRunResult } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { OPTIMIZER_MANIFEST_NAME, readCompleteBefore } from '../../src/storage/checkpoint';
import { checkpointsPrefix, parseStep } from '../../src/storage/keys';
import { disposeCheckpoint, loadCheckpoint } from '../../src/storage/policy_checkpoint';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();

test("a 7-step run with save_steps 2 and max_ckpt_to_keep 2 keeps every step's weights and the optimizer states of steps 5, 6 and 7", async () => {
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', `it-retention-${Date.now()}`, [
    'max_steps=7',
    'eval_steps=0',
    'save_steps=2',
    'max_ckpt_to_keep=2',
  ]);
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, {
    taskQueue: TASK_QUEUES.control,
    workflowId: input.runId,
    args: [input],
  });
  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, 7);

  const keys = (await stack.store.list(checkpointsPrefix(input.runId))).map((o) => o.key);
  const stepsWith = (name: string) =>
    keys
      .filter((k) => k.endsWith(`/${name}`))
      .map((k) => parseStep(k))
      .sort((a, b) => a! - b!);
  assert.deepEqual(stepsWith('manifest.json'), [1, 2, 3, 4, 5, 6, 7], 'the weights of every step stay');
  assert.deepEqual(stepsWith('model.safetensors'), [1, 2, 3, 4, 5, 6, 7]);
  // Full checkpoints follow the update of steps 2, 4 (g % save_steps == 0) and 6 (the last): steps 3, 5 and 7.
  // The newest two of them (7, 5) keep their optimizer state, and so does step 6, the one before the newest.
  assert.deepEqual(stepsWith(OPTIMIZER_MANIFEST_NAME), [5, 6, 7]);
  assert.deepEqual(stepsWith('optimizer.safetensors'), [5, 6, 7], 'dropped states leave no objects behind');

  const final = await loadCheckpoint(stack.store, result.finalCheckpoint, true);
  assert.equal(final.state.step, 7);
  assert.ok(final.optimizer, 'a resume continues from the newest step with its optimizer state');
  disposeCheckpoint(final);
  assert.equal(
    (await readCompleteBefore(stack.store, input.runId, 7, undefined, true))?.step,
    6,
    'a damaged newest replays from the step before',
  );
  assert.equal(
    (await readCompleteBefore(stack.store, input.runId, 5, undefined, true))?.step,
    0,
    'before step 5 only the warm-up can be trained on',
  );
  assert.equal((await readCompleteBefore(stack.store, input.runId, 5))?.step, 4, "eval and export still reach step 4's weights");
});
