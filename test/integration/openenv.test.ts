/**
 * Through the real Temporal and S3 servers with workers as separate processes: a run whose train and
 * validation envs are played on an OpenEnv server (test/helpers/openenv_server.ts, in this process) trains 2
 * steps; the server's text is in the stored trajectories as any env's observations; the group on which the
 * server goes silent is counted as failed and replaced, and the run completes.
 */

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { runInputFromFile } from '../../src/cli/run_input';
import type { StarpoRunResult, Trajectory } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { planShards } from '../../src/rollout/plan';
import { metricsKey, rolloutKey } from '../../src/storage/keys';
import { startOpenEnvServer, type TestOpenEnvServer, WORDS } from '../helpers/openenv_server';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();
const FIXTURE = 'test/fixtures/tiny_frozen_lake.yaml';

const remoteTag = (url: string) =>
  `+custom_envs.Remote={env_type: openenv, max_steps: 4, max_tokens_per_step: 24, agent_system_template: "", agent_template: "{observation}", ` +
  `env_config: {url: "${url}", answer_timeout_seconds: 2, env_instruction: "Say the word in <answer></answer>."}}`;
const overrides = (url: string) => ['warmup.type=none', 'train_env_manager.tags=[Remote]', 'val_env_manager.tags=[Remote]', remoteTag(url)];

let server: TestOpenEnvServer;
let faultySeed: number;
before(async () => {
  // The server goes silent in step 1 of train group 2's episodes of step 0 (planned as the run plans them).
  const planned = runInputFromFile(FIXTURE, 'plan', overrides('http://127.0.0.1:1')).input.config;
  faultySeed = planShards(planned, 'train', 0).flat()[2].seed;
  server = await startOpenEnvServer({ kind: 'silent', at: 1, seeds: [faultySeed] });
});
after(() => server.stop());

test('a run on an OpenEnv server trains 2 steps; a silent server fails one group, which is replaced', async () => {
  const runId = `it-openenv-${Date.now()}`;
  const { input } = runInputFromFile(FIXTURE, runId, overrides(server.url));
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: runId, args: [input] });
  const result: StarpoRunResult = await handle.result();
  assert.equal(result.steps, 2);
  const steps = await Promise.all(
    [0, 1].map(async (s) => ((await stack.store.getJson(metricsKey(runId, s))) as { metrics: Record<string, number> }).metrics),
  );
  assert.equal(steps[0]['env/failed_episodes'], 4, 'the 4 members of group 2');
  assert.equal(steps[0]['env/replaced_groups'], 1);
  assert.equal(steps[0]['env/dropped_groups'], 0);
  assert.equal(steps[1]['env/failed_episodes'], 0);
  assert.ok(Number.isFinite(steps[0]['actor/pg_loss']), 'the update ran on the complete batch');
  assert.ok(steps[0]['val/env/Remote/success'] >= 0 && steps[0]['val/env/Remote/success'] <= 1);
  const stored = (await Promise.all([0, 1].map((k) => stack.store.getJsonlGz<Trajectory>(rolloutKey(runId, 0, 'train', k))))).flat();
  assert.equal(stored.length, 16);
  for (const t of stored) assert.equal(t.turns[0].observation, `Say ${WORDS[t.seed % 4]}.`);
  assert.ok(
    stored.filter((t) => t.groupId === 2).every((t) => t.seed !== faultySeed),
    'group 2 was played from a fresh state',
  );
  const logs = readdirSync(stack.logDir)
    .filter((f) => f.startsWith('rollout'))
    .map((f) => readFileSync(join(stack.logDir, f), 'utf8'))
    .join('\n');
  const ws = `ws://${new URL(server.url).host}/ws`;
  assert.match(logs, new RegExp(`Remote env 8 \\(group 2, seed ${faultySeed}\\): step 1 threw: ${ws}: no answer within 2 s`));
  assert.equal(await server.settled(), 0, 'no session is left open');
});
