/**
 * A run from a Hub-style Qwen2 folder through the real Temporal and S3 servers: a tiny random Qwen2 made
 * by transformers (test/fixtures/hf, the real 151,665-id Qwen2.5 tokenizer and chat template) trains two
 * steps, and `starpo export` of the result is a folder that keeps the source's tokenizer and chat template
 * and on which `starpo generate` computes exactly what it computes from the run's checkpoint.
 * Loading that export in transformers itself is checked by test/fixtures/hf/check_export.py.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { endpointsToEnv } from '../../infra/env';
import { runInputFromFile } from '../../src/cli/run_input';
import type { StarpoRunResult } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { metricsKey } from '../../src/storage/keys';
import { materializeHfVariant, removeHfFolder } from '../helpers/hf_models';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();
const FIXTURE = 'test/fixtures/tiny_frozen_lake.yaml';

/** `starpo <args>` against the test servers: exit code and output. */
function starpo(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, ['bin/starpo.js', ...args], {
    env: { ...process.env, ...endpointsToEnv(stack.servers.endpoints) },
    encoding: 'utf8',
    timeout: 300_000,
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

test('a tiny Qwen2 folder with the real Qwen2.5 tokenizer trains 2 steps through Temporal + S3 and exports a folder that computes the same', async () => {
  const source = materializeHfVariant('tied_gqa');
  const work = mkdtempSync(join(tmpdir(), 'starpo-qwen-'));
  try {
    // Small enough for the wasm backend at a 151,936-id vocabulary: 4 episodes of 2 turns, one per micro-batch.
    const overrides = [
      `pretrain=${source}`,
      'warmup.type=none',
      'max_steps=2',
      'eval_steps=0',
      'sequence_length=320',
      'rollout_batch_size=4',
      'train_env_manager.num_env_groups=2',
      'train_env_manager.group_size=2',
      'train_env_manager.num_groups_partition=[2]',
      'custom_envs.FrozenLake.max_steps=2',
      'custom_envs.FrozenLake.max_tokens_per_step=8',
      'actor_infer.generating_args.max_new_tokens=8',
      'actor_train.training_args.per_device_train_batch_size=1',
      'actor_train.training_args.gradient_accumulation_steps=4',
      // every episode of a random model scores the same format penalties: raw scores keep a gradient
      'reward_normalization.method=identity',
    ];
    const check = starpo('config', 'check', FIXTURE, ...overrides);
    assert.equal(check.code, 0, check.stderr);

    const input = runInputFromFile(FIXTURE, `it-qwen-${Date.now()}`, overrides).input;
    const handle = await stack.client.workflow.start(WORKFLOW_TYPE, {
      taskQueue: TASK_QUEUES.control,
      workflowId: input.runId,
      args: [input],
    });
    const result: StarpoRunResult = await handle.result();
    assert.equal(result.steps, 2);
    for (const step of [0, 1]) {
      const { metrics } = (await stack.store.getJson(metricsKey(input.runId, step))) as { metrics: Record<string, number> };
      assert.ok(Number.isFinite(metrics['actor/pg_loss']), `step ${step} trained (actor/pg_loss ${metrics['actor/pg_loss']})`);
      assert.ok(Number.isFinite(metrics['actor/grad_norm']) && metrics['actor/grad_norm'] > 0, `step ${step} has a gradient`);
    }

    const exported = join(work, 'exported');
    const exportRes = starpo('export', input.runId, '--to', exported);
    assert.equal(exportRes.code, 0, exportRes.stderr);
    const readJSON = (dir: string, file: string) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as unknown;
    assert.deepEqual(readJSON(exported, 'tokenizer.json'), readJSON(source, 'tokenizer.json'), "the source's tokenizer");
    assert.deepEqual(
      readFileSync(join(exported, 'tokenizer_config.json')),
      readFileSync(join(source, 'tokenizer_config.json')),
      'and its chat template, byte for byte',
    );
    const config = JSON.parse(readFileSync(join(exported, 'config.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(config.dtype, 'float32');
    assert.equal(config.rope_theta, 1e6, "the source's RoPE theta (transformers 5 spelling in the source)");
    assert.equal(config.rope_parameters, undefined, 'one RoPE spelling');

    // The chat template renders the default system prompt; greedy tokens and log-probs agree exactly.
    const prompt = ['--prompt', 'You are on a frozen lake. Which way?', '--no-do-sample', '--max-new-tokens', '6', '--json'];
    const fromRun = starpo('generate', '--run', input.runId, ...prompt);
    assert.equal(fromRun.code, 0, fromRun.stderr);
    const fromExport = starpo('generate', '--model', exported, ...prompt);
    assert.equal(fromExport.code, 0, fromExport.stderr);
    const computed = (stdout: string) => {
      const {
        prompt: text,
        prompt_ids,
        ids,
        logprobs,
      } = JSON.parse(stdout) as { prompt: string; prompt_ids: number[]; ids: number[]; logprobs: number[] };
      return { text, prompt_ids, ids, logprobs };
    };
    const a = computed(fromRun.stdout);
    assert.match(
      a.text,
      /^<\|im_start\|>system\nYou are Qwen, created by Alibaba Cloud\. You are a helpful assistant\.<\|im_end\|>\n<\|im_start\|>user\n/,
    );
    assert.equal(a.ids.length, 6);
    assert.deepEqual(computed(fromExport.stdout), a);
  } finally {
    removeHfFolder(source);
    rmSync(work, { recursive: true, force: true });
  }
});
