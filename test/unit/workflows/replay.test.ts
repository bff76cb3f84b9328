/**
 * Replay safety: histories recorded from real runs (test/fixtures/histories/, made
 * by record.ts there) replay against the current workflow code. A change that makes the workflow
 * issue different commands for the same history (non-determinism) fails here; docs/design.md, "Changing
 * workflow code: replay safety", says when to use patched() and how to re-record.
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { historyFromJson } from '../../fixtures/histories/history_json';

const DIR = join(__dirname, '../../fixtures/histories');
const KINDS = ['plain', 'pause_stop', 'continued', 'eval', 'async', 'sweep', 'tracked'];

/** A recorded history and its workflow id (= the run or sweep id in the workflow input; the workflow checks it). */
function load(kind: string) {
  const history = historyFromJson(readFileSync(join(DIR, `${kind}.json`), 'utf8'));
  const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
  assert.ok(payload, `${kind}: the first event carries the workflow input`);
  const input = JSON.parse(Buffer.from(payload).toString('utf8')) as { runId?: string; sweepId?: string };
  const workflowId = (input.runId ?? input.sweepId) as string;
  return { workflowId, history };
}

test('recorded histories (plain; pause, unpause and stop; a continued run; an evaluation; async_generation_ratio 1; a paused sweep; a run with a tracker) replay against the current workflow code', async () => {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const histories = KINDS.map(load);
  const updates = histories[1].history.events?.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
  assert.equal(updates, 3, 'pause_stop holds the pause, unpause and stop updates');
  const results = Worker.runReplayHistories({ workflowsPath: require.resolve('../../../src/workflows') }, histories);
  let replayed = 0;
  for await (const r of results) {
    assert.equal(r.error, undefined, `${r.workflowId}: ${r.error?.message}`);
    replayed += 1;
  }
  assert.equal(replayed, KINDS.length);
});
