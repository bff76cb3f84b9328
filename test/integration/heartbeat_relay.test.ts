/**
 * The heartbeat relay through the real Temporal and S3 servers: with a 2 s heartbeat timeout and the whole
 * update batch (128 episodes) in one micro-batch, one synchronous tfjs computation that runs for several times
 * the timeout (and past the SDK's own timer of timeout + 5 s) while the activity's JS thread sends nothing,
 * every activity of the run still completes on its first attempt: the worker's relay thread heartbeats for
 * it and reports the update's result (src/activities/heartbeat_relay.ts). Without the relay the update is
 * timed out and retried (docs/durability.md, "Liveness"). The watchdog test (watchdog.test.ts) shows that a
 * hung attempt is still ended and retried with the relay running.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runInputFromFile } from '../../src/cli/run_input';
import type { StarpoRunResult } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { activityAttempts } from '../helpers/history';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();

test('an update whose single micro-batch computes longer than the heartbeat timeout completes on its first attempt', async () => {
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', `it-relay-${Date.now()}`);
  Object.assign(input.config, {
    max_steps: 1,
    eval_steps: 0,
    heartbeat_timeout_seconds: 2,
    watchdog_seconds: 60,
    // The whole batch (128 episodes of up to 400 tokens) in one micro-batch: one long forward and backward.
    rollout_batch_size: 128,
    actor_train: {
      training_args: { ...input.config.actor_train.training_args, per_device_train_batch_size: 128, gradient_accumulation_steps: 1 },
    },
    train_env_manager: { ...input.config.train_env_manager, num_env_groups: 32, num_groups_partition: [32], max_env_num_per_worker: 64 },
  });
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, {
    taskQueue: TASK_QUEUES.control,
    workflowId: input.runId,
    args: [input],
  });
  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, 1);

  const events = (await handle.fetchHistory()).events ?? [];
  const attempts = activityAttempts(events);
  assert.ok(
    attempts.some((a) => a.type === 'update'),
    'the run has an update',
  );
  assert.deepEqual(
    attempts.filter((a) => a.attempt !== 1),
    [],
    'every activity completed on its first attempt',
  );
  assert.equal(events.filter((e) => e.activityTaskTimedOutEventAttributes).length, 0, 'no activity timed out');
});
