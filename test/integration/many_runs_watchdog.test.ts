/**
 * Each run's activities compute under its own watchdog_seconds on workers shared with other runs: a run
 * with the watchdog off leaves its limit on the update worker, and the next run's warm-up (prepareRun)
 * still hangs under its own limit, so the watchdog ends the hung attempt (STARPO_TEST_STALL,
 * test/helpers/stall_fault.ts), the worker is started again and the run finishes.
 */

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runInputFromFile } from '../../src/cli/run_input';
import type { StarpoRunResult } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { useTrainingStack } from '../helpers/stack';
import { STALL_ENV } from '../helpers/stall_fault';

const stack = useTrainingStack();
// Read by the worker processes the stack spawns: the first heartbeat of a prepareRun hangs (once).
const marker = join(stack.logDir, 'stalled-once');
process.env[STALL_ENV] = `prepareRun:${marker}`;

async function play(name: string, overrides: string[]): Promise<StarpoRunResult> {
  const runId = `it-many-wd-${name}-${Date.now()}`;
  const { input } = runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', runId, ['max_steps=1', 'eval_steps=0', ...overrides]);
  return (await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: runId, args: [input] })).result();
}

// Without its own limit the hung warm-up would spin forever: the timeout ends the test then.
test("a warm-up that hangs after a run with the watchdog off is still ended by its own run's watchdog", { timeout: 600_000 }, async () => {
  // No warm-up: this run's prepareRun never heartbeats, so it does not hang; its update sets the limit off.
  assert.equal((await play('off', ['watchdog_seconds=0', 'warmup.type=none'])).steps, 1);
  const updateWorker = stack.workers.children.find((c) => c.role === 'update')!;
  const firstPid = updateWorker.child.pid;

  // Another seed: its own warm-up, which heartbeats and hangs at its first heartbeat.
  assert.equal((await play('limited', ['watchdog_seconds=10', 'heartbeat_timeout_seconds=5', 'seed=8'])).steps, 1);
  assert.ok(existsSync(marker), 'one prepareRun attempt hung');
  const log = readFileSync(join(stack.logDir, 'update.log'), 'utf8');
  assert.match(log, /starpo watchdog: no activity progress for \d+ s \(watchdog_seconds 10\); ending worker process \d+ with SIGALRM/);
  assert.notEqual(updateWorker.child.pid, firstPid, 'the spawner started a new update worker');
});
