/**
 * `starpo export` then `pretrain: <exported dir>` through the real Temporal and S3 servers: a 1-step run,
 * its latest checkpoint exported by the CLI as an HF folder (and `starpo generate` from the run's
 * checkpoint and from the folder agreeing), then a run from that folder with
 * `warmup: {type: none}` whose step-0 checkpoint holds the exported tensors exactly (sha256 per tensor),
 * and which trains a step from them. Also the export's bad-input errors (exit 2, naming the argument).
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { endpointsToEnv } from '../../infra/env';
import { runInputFromFile } from '../../src/cli/run_input';
import type { RunSpec, StarpoRunResult } from '../../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../../src/contract';
import { decodeSafetensors } from '../../src/model/hf/safetensors';
import { readCheckpoint, readInitial } from '../../src/storage/checkpoint';
import { metricsKey } from '../../src/storage/keys';
import { useTrainingStack } from '../helpers/stack';

const stack = useTrainingStack();
const FIXTURE = 'test/fixtures/tiny_frozen_lake.yaml';

async function run(input: RunSpec): Promise<StarpoRunResult> {
  const handle = await stack.client.workflow.start(WORKFLOW_TYPE, {
    taskQueue: TASK_QUEUES.control,
    workflowId: input.runId,
    args: [input],
  });
  return handle.result();
}

/** `starpo <args>` against the test servers: exit code and output. */
function starpo(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, ['bin/starpo.js', ...args], {
    env: { ...process.env, ...endpointsToEnv(stack.servers.endpoints) },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** sha256 of each tensor's data in a safetensors file, by tensor name. */
function tensorHashes(bytes: Uint8Array): Record<string, string> {
  const { tensors } = decodeSafetensors(bytes);
  return Object.fromEntries(
    Object.entries(tensors).map(([name, t]) => [
      name,
      createHash('sha256')
        .update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength))
        .digest('hex'),
    ]),
  );
}

test('starpo export writes an HF folder and a run with pretrain: <that folder> starts from identical weights', async () => {
  const work = mkdtempSync(join(tmpdir(), 'starpo-export-'));
  try {
    const first = runInputFromFile(FIXTURE, `it-export-${Date.now()}`, ['max_steps=1', 'eval_steps=0']).input;
    const trained = await run(first);
    assert.equal(trained.steps, 1);

    const dir = join(work, 'exported');
    const exported = starpo('export', first.runId, '--to', dir);
    assert.equal(exported.code, 0, exported.stderr);
    assert.match(
      exported.stdout,
      new RegExp(`exported run ${first.runId} step 1 \\(runs/${first.runId}/checkpoints/step-000001/manifest.json\\) to ${dir}`),
    );
    assert.deepEqual(readdirSync(dir).sort(), [
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'special_tokens_map.json',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    assert.deepEqual(readdirSync(work), ['exported'], 'no temp folder left behind');
    const source = await readCheckpoint(stack.store, trained.finalCheckpoint);
    const sourceHashes = tensorHashes(source.files['model.safetensors'] as Uint8Array);
    assert.deepEqual(tensorHashes(readFileSync(join(dir, 'model.safetensors'))), sourceHashes);

    // starpo generate: the run's checkpoint from S3 and the exported folder give the same reply and
    // log-probs; the run's generating_args are the defaults, each flag replaces one
    const prompt = ['--prompt', 'FrozenLake: reach G.\nTurn 1:\nP_G\n__#√', '--json'];
    const fromRun = starpo('generate', '--run', first.runId, '--step', '1', ...prompt, '--no-do-sample', '--max-new-tokens', '8');
    assert.equal(fromRun.code, 0, fromRun.stderr);
    const fromFolder = starpo('generate', '--model', dir, ...prompt, '--no-do-sample', '--max-new-tokens', '8');
    assert.equal(fromFolder.code, 0, fromFolder.stderr);
    const [r, f] = [JSON.parse(fromRun.stdout), JSON.parse(fromFolder.stdout)];
    assert.equal(r.model, `run ${first.runId} step 1`);
    assert.deepEqual([r.prompt_ids, r.ids], [f.prompt_ids, f.ids]);
    r.logprobs.forEach((lp: number, i: number) => assert.ok(Math.abs(lp - f.logprobs[i]) < 1e-6, `log-prob ${i}`));
    assert.deepEqual(r.generating_args, { ...first.config.actor_infer.generating_args, do_sample: false, max_new_tokens: 8 });
    const sampled = starpo('generate', '--run', first.runId, ...prompt);
    assert.equal(sampled.code, 0, sampled.stderr);
    assert.deepEqual(JSON.parse(sampled.stdout).generating_args, first.config.actor_infer.generating_args);
    const noStep = starpo('generate', '--run', first.runId, '--step', '7', '--prompt', 'x');
    assert.equal(noStep.code, 2);
    assert.match(noStep.stderr, /--step 7: run .* has no checkpoint at step 7; allowed: 0, 1/);

    // the exported folder is the initial policy of a new run (no warm-up: step 0 = the folder's weights)
    const check = starpo('config', 'check', FIXTURE, `pretrain=${dir}`, 'warmup.type=none');
    assert.equal(check.code, 0, check.stderr);
    const second = runInputFromFile(FIXTURE, `it-pretrained-${Date.now()}`, [
      `pretrain=${dir}`,
      'warmup.type=none',
      'max_steps=1',
      'eval_steps=0',
      'reward_normalization.method=identity',
    ]).input;
    assert.equal(second.config.pretrain, dir);
    const continued = await run(second);
    assert.equal(continued.steps, 1);
    const initial = await readInitial(stack.store, second.runId);
    assert.ok(initial, 'initial.json');
    const step0 = await readCheckpoint(stack.store, initial.manifest);
    const step0Hashes = tensorHashes(step0.files['model.safetensors'] as Uint8Array);
    assert.equal(Object.keys(step0Hashes).length, 26, '2 layers x 12 tensors + embedding + final norm (tied lm_head)');
    assert.deepEqual(step0Hashes, sourceHashes, 'sha256 of every tensor equal');
    assert.equal(
      JSON.parse(new TextDecoder().decode(step0.files['tokenizer.json'])).model.type,
      'BPE',
      "the run uses the folder's HF tokenizer",
    );
    const metrics = (await stack.store.getJson(metricsKey(second.runId, 0))) as { metrics: Record<string, number> };
    assert.equal(metrics.metrics['warmup/type_none'], 1);
    assert.ok(Number.isFinite(metrics.metrics['actor/pg_loss']), 'and it trains a step from there');
    const after = await readCheckpoint(stack.store, continued.finalCheckpoint);
    assert.notDeepEqual(
      tensorHashes(after.files['model.safetensors'] as Uint8Array),
      sourceHashes,
      'the update (identity advantages) moved the weights',
    );

    // bad input: exit 2, naming the argument
    const full = starpo('export', first.runId, '--to', dir);
    assert.equal(full.code, 2);
    assert.match(full.stderr, new RegExp(`^error: --to ${dir}: the folder is not empty; allowed: a new or empty folder\\n$`));
    const unknown = starpo('export', 'no-such-run', '--to', join(work, 'x'));
    assert.equal(unknown.code, 2);
    assert.match(
      unknown.stderr,
      /^error: run "no-such-run" not found: no runs\/no-such-run\/run.json in bucket \S+ \(see `starpo list`\)\n$/,
    );
    const missingStep = starpo('export', first.runId, '--step', '7', '--to', join(work, 'x'));
    assert.equal(missingStep.code, 2);
    assert.match(missingStep.stderr, /--step 7: run .* has no checkpoint at step 7; allowed: 0, 1/);
    assert.ok(!existsSync(join(work, 'x')), 'nothing written on error');
    const empty = join(work, 'empty');
    mkdirSync(empty);
    const step0Export = starpo('export', first.runId, '--step', '0', '--to', empty);
    assert.equal(step0Export.code, 0, step0Export.stderr);
    assert.ok(existsSync(join(empty, 'model.safetensors')), 'an empty folder is filled');
    writeFileSync(join(work, 'file'), 'x');
    assert.equal(starpo('export', first.runId, '--to', join(work, 'file')).code, 2);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
