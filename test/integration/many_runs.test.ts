/**
 * Several runs on one cluster, through the real Temporal and S3 servers with workers as separate processes:
 * a poisoned run (every episode's env throws) fails alone with an EnvFailure naming the first env failure,
 * without retries, while a healthy run started beside it on the same workers finishes. Poisoned once in its
 * warm-up (the demonstrations) and once in its first step (no warm-up). A run id names one run: a second
 * run under a taken id is refused, while the first runs and after it closed.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ActivityFailure, ApplicationFailure, WorkflowExecutionAlreadyStartedError, WorkflowFailedError } from '@temporalio/client';
import { RetryState } from '@temporalio/common';
import { runInputFromFile } from '../../src/cli/run_input';
import type { StarpoRunResult } from '../../src/contract';
import { CONFIG_ERROR, ENV_FAILURE, TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { runKey } from '../../src/storage/keys';
import { poisonOverrides } from '../helpers/poison';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();
const FIXTURE = 'test/fixtures/tiny_frozen_lake.yaml';

async function start(name: string, overrides: string[], runId = `it-many-${name}-${Date.now()}`) {
  const { input } = runInputFromFile(FIXTURE, runId, ['eval_steps=0', ...overrides]);
  return stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: runId, args: [input] });
}

/** The run's failure: the workflow failed with an EnvFailure, and whatever wrapped it. */
async function envFailureOf(result: Promise<unknown>): Promise<{ failure: ApplicationFailure; activity: ActivityFailure | null }> {
  const err = await result.then(
    () => assert.fail('the poisoned run finished'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof WorkflowFailedError, String(err));
  const activity = err.cause instanceof ActivityFailure ? err.cause : null;
  const failure = activity ? activity.cause : err.cause;
  assert.ok(failure instanceof ApplicationFailure, String(failure));
  assert.equal(failure.type, ENV_FAILURE);
  return { failure, activity };
}

test('a run poisoned in its warm-up and one poisoned in its first step fail alone with an EnvFailure; a healthy run beside them finishes', async () => {
  const poisoned = poisonOverrides(FIXTURE);
  const healthy = await start('healthy', []);
  const inWarmup = await start('poison-warmup', poisoned);
  const inStep = await start('poison-step', [...poisoned, 'warmup.type=none']);

  const warm = await envFailureOf(inWarmup.result());
  assert.match(
    warm.failure.message,
    /^warm-up: every demonstration episode failed, replacements included; the first: Poison env \d+ \(group \d+, seed \d+\): reset threw: chaos: injected failure in reset/,
  );
  assert.equal(warm.activity?.activityType, 'prepareRun');
  assert.equal(warm.activity?.retryState, RetryState.NON_RETRYABLE_FAILURE, 'not retried');

  const step = await envFailureOf(inStep.result());
  assert.match(
    step.failure.message,
    /^step 0: every env group failed, replacements included; the first: Poison env \d+ \(group \d+, seed \d+\): reset threw: chaos: injected failure in reset/,
  );

  const result: StarpoRunResult = await healthy.result();
  assert.equal(result.steps, 2);
  assert.equal(result.stoppedBy, null);
});

test('a second run under a taken run id is refused while the first runs and after it closed; the first keeps its run.json', async () => {
  const first = await start('taken', ['warmup.type=none']);
  const runId = first.workflowId;
  await assert.rejects(start('taken', ['seed=8'], runId), WorkflowExecutionAlreadyStartedError);
  // Close the first run once its run.json is stored, then start a run of another config under its id.
  while (!(await stack.store.exists(runKey(runId)))) await new Promise((r) => setTimeout(r, 200));
  await first.terminate('closed to free the workflow id');
  const before = await stack.store.getJson(runKey(runId));
  const second = await start('taken', ['seed=8'], runId);
  const err = await second.result().then(
    () => assert.fail('the second run under a taken id ran'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof WorkflowFailedError && err.cause instanceof ActivityFailure, String(err));
  const failure = err.cause.cause;
  assert.ok(failure instanceof ApplicationFailure, String(failure));
  assert.equal(failure.type, CONFIG_ERROR);
  assert.match(failure.message, new RegExp(`run id "${runId}" is taken: runs/${runId}/run.json holds a run of another config`));
  assert.equal(err.cause.retryState, RetryState.NON_RETRYABLE_FAILURE, 'not retried');
  assert.deepEqual(await stack.store.getJson(runKey(runId)), before);
});
