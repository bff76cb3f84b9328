/**
 * A backend out of memory through the real Temporal and S3 servers: the quickstart config on wasm with the whole
 * update batch (128 episodes of up to 768 tokens) in one micro-batch, more than the 4 GiB wasm heap holds. The
 * update attempt fails naming the role, the micro-batch's shape and the memory; its worker process exits and the
 * spawner starts it again clean; the attempt on the fresh process fails the same way and is not retried, so the
 * run ends FAILED with that cause in `starpo status` (docs/durability.md, "A backend out of memory").
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { RetryState } from '@temporalio/common';
import { BACKEND_LOST_EXIT_CODE } from '../../src/activities/out_of_memory';
import { runStatus } from '../../src/cli/operate';
import { runInputFromFile } from '../../src/cli/run_input';
import { OUT_OF_MEMORY_ERROR, type OutOfMemoryDetails, TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { WASM_HEAP_BYTES } from '../../src/model/wasm_memory';
import { activityAttempts } from '../helpers/history';
import { useTrainingStack } from '../helpers/stack';

// Read by the worker processes the stack spawns (they inherit this environment).
process.env.STARPO_BACKEND = 'wasm';
const stack = useTrainingStack();

/** The quickstart with one update micro-batch of the whole step: 16 groups x 8 episodes on 8x8 maps, no warm-up. */
const HUGE_MICRO_BATCH = [
  'max_steps=2',
  'eval_steps=0',
  'warmup.type=none',
  'rollout_batch_size=128',
  'train_env_manager.num_env_groups=16',
  'train_env_manager.num_groups_partition=[16]',
  'train_env_manager.max_env_num_per_worker=128',
  'custom_envs.FrozenLake.env_config.size=8',
  'actor_train.training_args.per_device_train_batch_size=128',
  'actor_train.training_args.gradient_accumulation_steps=1',
];

// A safety net, not a measurement: a run that retried without end would otherwise hang the suite.
test('an update micro-batch larger than the wasm heap fails the run with the role, the shape and the memory', {
  timeout: 15 * 60_000,
}, async () => {
  const { input } = runInputFromFile('configs/frozen_lake.yaml', `it-oom-${Date.now()}`, HUGE_MICRO_BATCH);
  const updateWorker = stack.workers.children.find((c) => c.role === 'update')!;
  const firstPid = updateWorker.child.pid;
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, {
    taskQueue: TASK_QUEUES.control,
    workflowId: input.runId,
    args: [input],
  });

  const err = await handle.result().then(
    () => assert.fail('the run completed'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof WorkflowFailedError && err.cause instanceof ActivityFailure, String(err));
  assert.equal(err.cause.activityType, 'update');
  assert.equal(err.cause.retryState, RetryState.NON_RETRYABLE_FAILURE);
  const failure = err.cause.cause;
  assert.ok(failure instanceof ApplicationFailure, String(failure));
  assert.equal(failure.type, OUT_OF_MEMORY_ERROR);
  assert.match(
    failure.message,
    /^update: out of wasm memory in a micro-batch of 128 x \d+ tokens \(rows x tokens\): it needed at least \d+\.\d\d GiB \(\d+\.\d\d GiB held by tensors \+ an allocation of \d+\.\d\d GiB\); the wasm backend holds at most 4\.00 GiB\. Lower actor_train\.training_args\.per_device_train_batch_size .* Not retried: the same input fails the same way on a fresh worker\.$/,
  );
  const details = failure.details?.[0] as OutOfMemoryDetails;
  assert.equal(details.shape?.rows, 128);
  assert.ok((details.shape?.tokens ?? 0) > 400, `the episodes are long (${details.shape?.tokens} tokens)`);
  assert.ok(details.heldBytes + (details.requestBytes ?? 0) > WASM_HEAP_BYTES, 'it needed more than the heap holds');

  // Attempt 1 ran on a worker that had run other activities: retried once, on the restarted process, and no more.
  const attempts = activityAttempts((await handle.fetchHistory()).events ?? []);
  assert.deepEqual(
    attempts.filter((a) => a.type === 'update'),
    [{ type: 'update', attempt: 2 }],
  );
  const log = readFileSync(join(stack.logDir, 'update.log'), 'utf8');
  const exits = log.match(
    new RegExp(
      `the wasm backend ran out of memory: this worker process takes no more tasks and exits \\(code ${BACKEND_LOST_EXIT_CODE}\\)`,
      'g',
    ),
  );
  assert.equal(exits?.length, 2, 'each failed attempt ended its worker process');
  assert.notEqual(updateWorker.child.pid, firstPid, 'the spawner started the update worker again');

  const status = await runStatus(stack.client, input.runId);
  assert.equal(status.status, 'FAILED');
  assert.equal(status.failure, failure.message);
});
