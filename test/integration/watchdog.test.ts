/**
 * The activity watchdog through the real Temporal and S3 servers: an update attempt whose JS
 * thread spins forever (the STARPO_TEST_STALL fault, test/helpers/stall_fault.ts) ends its worker process with
 * SIGALRM, the spawner starts the worker again, Temporal retries the update, and the run finishes.
 */

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runInputFromFile } from '../../src/cli/run_input';
import type { StarpoRunResult } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { activityAttempts } from '../helpers/history';
import { useTrainingStack } from '../helpers/stack';
import { STALL_ENV } from '../helpers/stall_fault';

const stack = useTrainingStack();
// Read by the worker processes the stack spawns (they inherit this environment).
const marker = join(stack.logDir, 'stalled-once');
process.env[STALL_ENV] = `update:${marker}`;

test('an update that hangs in a synchronous loop is ended by the watchdog and retried on a fresh worker process', async () => {
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', `it-watchdog-${Date.now()}`);
  Object.assign(input.config, { max_steps: 2, eval_steps: 0, watchdog_seconds: 10 });
  const updateWorker = stack.workers.children.find((c) => c.role === 'update')!;
  const firstPid = updateWorker.child.pid;
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, {
    taskQueue: TASK_QUEUES.control,
    workflowId: input.runId,
    args: [input],
  });
  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, 2);

  assert.ok(existsSync(marker), 'one update attempt hung');
  const log = readFileSync(join(stack.logDir, 'update.log'), 'utf8');
  assert.match(log, /starpo watchdog: no activity progress for \d+ s \(watchdog_seconds 10\); ending worker process \d+ with SIGALRM/);
  assert.notEqual(updateWorker.child.pid, firstPid, 'the spawner started a new update worker');
  const history = await handle.fetchHistory();
  const updateAttempts = activityAttempts(history.events ?? [])
    .filter((a) => a.type === 'update')
    .map((a) => a.attempt);
  // Temporal records only the last attempt's started event; the hung one shows as attempt 2 of the first update.
  assert.deepEqual(updateAttempts, [2, 1]);
});
