/**
 * `starpo backend install|status|check` (docs/backends.md). Wired into the `starpo` command by
 * main.ts; the install, status and check modules load lazily. Progress goes to stderr, results to stdout.
 */
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type BackendName, canonicalBackend } from '../model/backend_choice';
import { intAtLeast } from './report';

/**
 * Parses a `--backend` value to its canonical name (the package names tfjs-node / tfjs-node-gpu included);
 * an unknown one is a usage error (exit 2) naming the allowed names.
 */
export function backendArgument(value: string): BackendName {
  try {
    return canonicalBackend(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** Adds `backend install` and `backend status` to `program`. */
export function registerBackendCommands(program: Command): void {
  const backend = program
    .command('backend')
    .description('tfjs backends: build the native TensorFlow backend into the cache, show what this host can run');
  const log = (line: string) => process.stderr.write(`[backend] ${line}\n`);
  backend
    .command('install')
    .description(
      "build the native TensorFlow CPU backend (tfjs-node's binding against PyPI's tensorflow-cpu wheel) into ~/.cache/starpo/native; a second run is a cache hit",
    )
    .option(
      '--gpu',
      "build the GPU backend instead: tfjs-node-gpu's binding against PyPI's tensorflow wheel, with the CUDA 12 / cuDNN 9 wheels beside it (about 2.5 GB to download)",
    )
    .option('--force', 'rebuild even when a valid build is there (the old one is replaced once the new one passed its smoke test)')
    .action(async (o: { gpu?: boolean; force?: boolean }) => {
      const { installNativeBackend } = require('./backend_install') as typeof import('./backend_install');
      const { NATIVE_CPU, NATIVE_GPU } = require('../model/native_build') as typeof import('../model/native_build');
      const { folderBytes, mb } = require('../../infra/install_progress') as typeof import('../../infra/install_progress');
      const variant = o.gpu ? NATIVE_GPU : NATIVE_CPU;
      const t0 = Date.now();
      const out = await installNativeBackend({ variant, force: o.force, log });
      const seconds = ((Date.now() - t0) / 1000).toFixed(1);
      const m = out.manifest;
      process.stdout.write(
        `${out.cached ? 'already installed' : 'installed'}: ${out.dir}\n` +
          `  ${variant.tfjsNode.name} ${m.tfjsNode} on ${m.tensorflow.package} ${m.tensorflow.version}${o.gpu ? ` with ${Object.keys(m.cudaWheels).length} CUDA wheels` : ''}, ${mb(folderBytes(out.dir))} MB, ${seconds} s\n` +
          `  worker roles now default to it (starpo backend status shows each role's choice; --backend or STARPO_BACKEND choose another)\n`,
      );
    });
  backend
    .command('status')
    .description('which backends this host can run, the native build (path, versions, size), and the backend of each worker role')
    .option('--json', 'print the status as JSON')
    .action(async (o: { json?: boolean }) => {
      const { backendStatus, formatBackendStatus } = require('./backend_status') as typeof import('./backend_status');
      const s = await backendStatus();
      process.stdout.write(o.json ? `${JSON.stringify(s, null, 2)}\n` : `${formatBackendStatus(s).join('\n')}\n`);
    });
  registerCheckCommand(backend, log);
}

/**
 * `backend check`'s default sizes: an update of 8 x 256 tokens in micro-batches of 4 and a generation batch of
 * 8 rows, of the whole Qwen2.5-0.5B shape on a GPU; the layers default is set once the device is known
 * (backend_check.ts), because the whole model's update does not fit a typical CPU host's memory.
 */
const CHECK_DEFAULTS = {
  vocab: 151936,
  batch: 8,
  length: 256,
  microBatch: 4,
  rows: 8,
  prompt: 128,
  newTokens: 32,
  rounds: 2,
  gradientCheckpointing: true, // ROLL's default (model_args.disable_gradient_checkpointing: false)
  config: resolve(__dirname, '..', '..', 'configs', 'frozen_lake_solver.yaml'), // the quickstart's (npm start)
};

/** `--layers`: 1..24, the layers Qwen2.5-0.5B has. */
function layersArgument(value: string): number {
  const n = intAtLeast(1)(value);
  if (n > 24) throw new InvalidArgumentError(`${JSON.stringify(value)} is more than Qwen2.5-0.5B's 24 layers; allowed: 1..24`);
  return n;
}

/** `--gradient-checkpointing`: on or off. */
function onOffArgument(value: string): boolean {
  if (value === 'on' || value === 'off') return value === 'on';
  throw new InvalidArgumentError(`${JSON.stringify(value)}; allowed: on, off`);
}

/** `backend check`: times one update and one rollout batch of a Qwen2.5-0.5B-shaped model (backend_check.ts). */
function registerCheckCommand(backend: Command, log: (line: string) => void): void {
  const d = CHECK_DEFAULTS;
  backend
    .command('check')
    .description(
      'the device TensorFlow computes on, and tokens/s of one update and one rollout batch of a Qwen2.5-0.5B-shaped model (random init) on the backend a worker would use',
    )
    .addOption(
      new Option('--backend <name>', 'backend to check (default: STARPO_BACKEND, else what an update worker uses)').argParser(
        backendArgument,
      ),
    )
    .option('--layers <n>', 'decoder layers, 1..24 (default: all 24 of Qwen2.5-0.5B on a GPU, 2 on a CPU)', layersArgument)
    .option('--vocab <n>', "vocabulary size (Qwen2.5's is 151,936; a smaller one fits wasm's 4 GB at a few layers)", intAtLeast(2), d.vocab)
    .option('--batch <n>', 'trajectories in the update', intAtLeast(1), d.batch)
    .option('--length <n>', 'tokens per trajectory (half prompt, half response)', intAtLeast(2), d.length)
    .option('--micro-batch <n>', 'trajectories per forward/backward pass (per_device_train_batch_size)', intAtLeast(1), d.microBatch)
    .option('--rows <n>', 'rows of the rollout generation batch', intAtLeast(1), d.rows)
    .option('--prompt <n>', 'prompt tokens per generation row', intAtLeast(1), d.prompt)
    .option('--new-tokens <n>', 'new tokens per generation row', intAtLeast(1), d.newTokens)
    .option('--rounds <n>', 'times each is run (the first includes one-off set-up costs)', intAtLeast(1), d.rounds)
    .addOption(
      new Option(
        '--gradient-checkpointing <on|off>',
        "recompute each decoder layer in the update's backward pass (ROLL's model_args.disable_gradient_checkpointing: false) or keep its intermediates",
      )
        .argParser(onOffArgument)
        .default(d.gradientCheckpointing, 'on'),
    )
    .option(
      '--lora-target <modules>',
      "train LoRA adapters on these modules instead of every weight (ROLL's lora_target: all, a comma list such as q_proj,v_proj, or a regex)",
    )
    .option('--lora-rank <n>', "the adapters' rank (ROLL's lora_rank; with --lora-target)", intAtLeast(1))
    .option('--config <file>', "the config whose update and sampling settings are used (the quickstart's by default)", d.config)
    .option('--json', 'print the result as JSON')
    .action(async (o: import('./backend_check').CheckOptions & { backend?: string; json?: boolean }) => {
      const { backendCheck, formatBackendCheck } = require('./backend_check') as typeof import('./backend_check');
      if (o.backend !== undefined) process.env.STARPO_BACKEND = o.backend;
      const r = await backendCheck(o, log);
      process.stdout.write(o.json ? `${JSON.stringify(r, null, 2)}\n` : `${formatBackendCheck(r).join('\n')}\n`);
    });
}
