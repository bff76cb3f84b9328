/**
 * save_steps and max_ckpt_to_keep through the real servers and workers: after a short run with
 * max_ckpt_to_keep > 0, weights and optimizer states are in the store only for the newest step, the one
 * before it and the newest max_ckpt_to_keep full checkpoints; what a resume or a replay continues from is
 * still there, every step's trainer state and trajectory scores stay for `report`, and `export` of a
 * dropped step says why it cannot.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BadInputError } from '../../src/cli/exit_codes';
import { pickCheckpoint } from '../../src/cli/pick_checkpoint';
import { runInputFromFile } from '../../src/cli/run_input';
import type { StarpoRunResult } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { checkpointSteps, OPTIMIZER_MANIFEST_NAME, readCheckpointFile, readCompleteBefore } from '../../src/storage/checkpoint';
import { checkpointPrefix, checkpointsPrefix, parseStep, TRAJECTORY_SCORES_NAME } from '../../src/storage/keys';
import { disposeCheckpoint, loadCheckpoint } from '../../src/storage/policy_checkpoint';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();

test('a 7-step run with save_steps 2 and max_ckpt_to_keep 2 keeps the weights and optimizer states of steps 5, 6 and 7 only', async () => {
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
  assert.deepEqual(stepsWith('manifest.json'), [1, 2, 3, 4, 5, 6, 7], 'every manifest stays (report reads each step)');
  // Full checkpoints follow the update of steps 2, 4 (g % save_steps == 0) and 6 (the last): steps 3, 5 and 7.
  // The newest two of them (7, 5) keep their weights and optimizer state, and so does step 6, the one before the newest.
  assert.deepEqual(stepsWith('model.safetensors'), [5, 6, 7]);
  assert.deepEqual(stepsWith(OPTIMIZER_MANIFEST_NAME), [5, 6, 7]);
  assert.deepEqual(stepsWith('optimizer.safetensors'), [5, 6, 7], 'dropped states leave no objects behind');
  assert.deepEqual(stepsWith(TRAJECTORY_SCORES_NAME), [1, 2, 3, 4, 5, 6, 7]);
  const scores = await readCheckpointFile(stack.store, `${checkpointPrefix(input.runId, 2)}manifest.json`, TRAJECTORY_SCORES_NAME);
  assert.equal(JSON.parse(new TextDecoder().decode(scores!)).step, 1, "a dropped step's trajectory scores still read, verified");
  assert.deepEqual(await checkpointSteps(stack.store, input.runId), [0, 5, 6, 7]);
  await assert.rejects(
    pickCheckpoint(stack.store, input.runId, 4, '--step 4', () => undefined),
    (err: Error) =>
      err instanceof BadInputError &&
      err.message ===
        `--step 4: run ${input.runId} has no checkpoint at step 4 (max_ckpt_to_keep dropped its weights); allowed: 0, 5, 6, 7`,
  );

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
  assert.equal((await readCompleteBefore(stack.store, input.runId, 5))?.step, 0, 'before step 5 only the warm-up has weights');
});
