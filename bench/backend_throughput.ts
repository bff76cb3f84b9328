/**
 * Update and generation throughput on wasm and on the native CPU backend (`tensorflow`), side by side, for the
 * quickstart model and for a 2-layer slice of Qwen2.5-0.5B, with each figure's model FLOP/s divided by the same
 * process's GEMM FLOP/s at the model's own matmul shapes, and its peak RSS. One markdown table and one JSON line.
 *
 *   node --import tsx bench/backend_throughput.ts [--slice-batch 4] [--slice-length 128] [--slice-micro-batch 4]
 *     [--slice-rows 8] [--slice-prompt 128] [--slice-new-tokens 16] [--rounds 2]
 *     [--backends wasm,tensorflow] [--models quickstart,slice] [--jobs update,generation]
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import {
  atLength,
  batchOverrides,
  groupSizeFor,
  peakRssBytes,
  qwen25HalfBShape,
  randomContexts,
  randomTrajectories,
  timeGeneration,
  timeUpdate,
  type UpdateParts,
} from '../src/algo/throughput';
import type { RunConfig, Trajectory } from '../src/contract';
import { initBackend } from '../src/model/backend';
import { headDim, type Qwen2Config, tinyPreset } from '../src/model/config';
import { inspectNativeBuild } from '../src/model/native_build';
import { outOfMemoryOf } from '../src/model/out_of_memory';
import { Qwen2 } from '../src/model/qwen2';
import { charTokenizer } from '../src/model/tokenizer';
import { loadConfigFile } from '../src/preflight/load';
import { warmupDemonstrations } from '../src/rollout/demonstrations';
import { decodeFlops, modelFlops } from './flops';

const QUICKSTART = 'configs/frozen_lake_solver.yaml';
const MODELS = ['quickstart', 'slice'] as const;
const JOBS = ['update', 'generation'] as const;
const BACKENDS = ['wasm', 'tensorflow'] as const;

interface SliceSizes {
  batch: number;
  length: number;
  microBatch: number;
  rows: number;
  prompt: number;
  newTokens: number;
}
interface CellSpec {
  backend: string;
  model: (typeof MODELS)[number];
  job: (typeof JOBS)[number];
  slice: SliceSizes;
  rounds: number;
}

interface GemmShape {
  name: string;
  m: number;
  k: number;
  n: number;
  flops: number;
  gflops: number;
}
interface CellResult extends Omit<CellSpec, 'slice'> {
  error?: string;
  tokens?: number;
  seconds?: number[];
  tokensPerSecond?: number;
  modelGflops?: number;
  gemm?: { gflops: number; shapes: GemmShape[] };
  gemmRatio?: number;
  /** Update cells: seconds of the warm round's parts. */
  parts?: UpdateParts;
  peakRssBytes?: number;
  load?: [number, number];
}

/** What one cell computes on: its model, config, and the update's trajectories or the generation's contexts. */
interface Workload {
  cfg: Qwen2Config;
  model: Qwen2;
  config: RunConfig;
  padId: number;
  trajectories: Trajectory[];
  contexts: number[][];
  newTokens: number;
  microBatch: number;
}

async function workload(spec: CellSpec): Promise<Workload> {
  if (spec.model === 'quickstart') {
    const { config } = loadConfigFile(QUICKSTART);
    const tokenizer = charTokenizer();
    const cfg = tinyPreset(tokenizer.vocabSize);
    const batch = config.rollout_batch_size;
    const group = config.train_env_manager.group_size;
    const { episodes } = await warmupDemonstrations({ ...config, warmup: { ...config.warmup, num_episodes: batch } }, tokenizer);
    const trajectories = episodes.map((t, i) => ({ ...t, trajGroupId: `FrozenLake_${Math.floor(i / group)}_0_0` }));
    const contexts = trajectories
      .slice(0, config.train_env_manager.max_env_num_per_worker || batch)
      .map((t) => t.inputIds.slice(0, t.responseMask.indexOf(1)));
    return {
      cfg,
      model: Qwen2.random(cfg, 1),
      config,
      padId: tokenizer.padId,
      trajectories,
      contexts,
      newTokens: config.actor_infer.generating_args.max_new_tokens,
      microBatch: config.actor_train.training_args.per_device_train_batch_size,
    };
  }
  const s = spec.slice;
  const config = atLength(loadConfigFile(QUICKSTART, batchOverrides(s)).config, s.length);
  const cfg = qwen25HalfBShape(2);
  return {
    cfg,
    model: Qwen2.random(cfg, 1),
    config,
    padId: 0,
    trajectories: randomTrajectories({
      count: s.batch,
      length: s.length,
      vocab: cfg.vocab_size,
      groupSize: groupSizeFor(s.batch),
      seed: 1,
    }),
    contexts: randomContexts({ rows: s.rows, prompt: s.prompt, vocab: cfg.vocab_size, seed: 1 }),
    newTokens: s.newTokens,
    microBatch: s.microBatch,
  };
}

/** Model FLOPs of the cell's job (see the file comment). */
function jobFlops(spec: CellSpec, w: Workload): number {
  if (spec.job === 'update')
    return (
      3 *
      modelFlops(
        w.cfg,
        w.trajectories.map((t) => t.inputIds.length),
      ) *
      w.config.ppo_epochs
    );
  const decode = w.contexts.reduce(
    (s, c) => s + Array.from({ length: w.newTokens - 1 }, (_, j) => decodeFlops(w.cfg, c.length + j)).reduce((a, b) => a + b, 0),
    0,
  );
  return (
    modelFlops(
      w.cfg,
      w.contexts.map((c) => c.length),
      'last',
    ) + decode
  );
}

/** GFLOP/s of an [m, k] x [k, n] float32 matmul: one warm-up, then at least 3 runs and 0.5 s. */
function gemmGflops(m: number, k: number, n: number): number {
  const a = tf.randomNormal([m, k]);
  const b = tf.randomNormal([k, n]);
  const run = () => tf.tidy(() => tf.matMul(a, b)).dataSync();
  run();
  let reps = 0;
  const t0 = performance.now();
  while (reps < 3 || performance.now() - t0 < 500) {
    run();
    reps++;
  }
  const ms = performance.now() - t0;
  tf.dispose([a, b]);
  return (2 * m * k * n * reps) / ms / 1e6;
}

/** One kind of forward pass of a job: `m` rows through the trunk's linear layers, `lmHeadM` through lm_head, `times` times. */
interface Pass {
  m: number;
  lmHeadM: number;
  times: number;
}

/**
 * The rate of the model's linear layers as plain GEMMs at the jobs' shapes, combined by FLOP share (total FLOPs /
 * the sum of each shape's time), and the shapes by share, largest first.
 */
function gemmMix(cfg: Qwen2Config, passes: Pass[]): { gflops: number; shapes: GemmShape[] } {
  const E = cfg.hidden_size;
  const Q = cfg.num_attention_heads * headDim(cfg);
  const KV = cfg.num_key_value_heads * headDim(cfg);
  const F = cfg.intermediate_size;
  const layers = cfg.num_hidden_layers;
  const byShape = new Map<string, GemmShape>();
  for (const p of passes) {
    const linear: Array<[string, number, number, number, number]> = [
      ['q_proj', p.m, E, Q, layers],
      ['k_proj+v_proj', p.m, E, KV, 2 * layers],
      ['o_proj', p.m, Q, E, layers],
      ['gate_proj+up_proj', p.m, E, F, 2 * layers],
      ['down_proj', p.m, F, E, layers],
      ['lm_head', p.lmHeadM, E, cfg.vocab_size, 1],
    ];
    for (const [name, m, k, n, count] of linear) {
      const key = `${name} ${m}x${k}x${n}`;
      const shape = byShape.get(key) ?? { name, m, k, n, flops: 0, gflops: gemmGflops(m, k, n) };
      shape.flops += 2 * m * k * n * count * p.times;
      byShape.set(key, shape);
    }
  }
  const shapes = [...byShape.values()].sort((a, b) => b.flops - a.flops);
  const flops = shapes.reduce((s, x) => s + x.flops, 0);
  const seconds = shapes.reduce((s, x) => s + x.flops / (x.gflops * 1e9), 0);
  return { gflops: flops / seconds / 1e9, shapes };
}

/**
 * The passes of a cell's job: the update's micro-batches (rows x their mean length, logits everywhere), or
 * generation's prefill (rows x the longest context, logits at the last position) and its cached decode steps.
 */
function passesOf(spec: CellSpec, w: Workload): Pass[] {
  if (spec.job === 'update') {
    const meanLength = w.trajectories.reduce((s, t) => s + t.inputIds.length, 0) / w.trajectories.length;
    const m = Math.round(Math.min(w.microBatch, w.trajectories.length) * meanLength);
    return [{ m, lmHeadM: m, times: 1 }];
  }
  const rows = w.contexts.length;
  return [
    { m: rows * Math.max(...w.contexts.map((c) => c.length)), lmHeadM: rows, times: 1 },
    { m: rows, lmHeadM: rows, times: w.newTokens - 1 },
  ];
}

/** Runs one cell in this process (the child). */
async function runCell(spec: CellSpec): Promise<CellResult> {
  const { slice: _, ...id } = spec;
  const load0 = loadavg()[0];
  delete process.env.STARPO_BACKEND; // the cell names its backend
  await initBackend(spec.backend);
  const seconds: number[] = [];
  let tokens = 0;
  let parts: UpdateParts | undefined;
  let w: Workload;
  try {
    w = await workload(spec);
    for (let r = 0; r < spec.rounds; r++) {
      const t =
        spec.job === 'update'
          ? await timeUpdate({ model: w.model, config: w.config, trajectories: w.trajectories, padId: w.padId })
          : {
              ...timeGeneration({ model: w.model, config: w.config, contexts: w.contexts, newTokens: w.newTokens, seed: 1 }),
              parts: undefined,
            };
      // The parts of the round the rates come from: the fastest after the first (the only one with --rounds 1).
      if (t.parts && (r === 0 || t.seconds < Math.min(...seconds.slice(1)))) parts = t.parts;
      seconds.push(t.seconds);
      tokens = t.tokens;
    }
  } catch (err) {
    if (outOfMemoryOf(err)?.details.backend === 'wasm') return { ...id, error: 'out of wasm memory', peakRssBytes: peakRssBytes() };
    throw err;
  }
  const peak = peakRssBytes();
  w.model.dispose();
  const warm = Math.min(...(seconds.length > 1 ? seconds.slice(1) : seconds));
  const gemm = gemmMix(w.cfg, passesOf(spec, w));
  const modelGflops = jobFlops(spec, w) / warm / 1e9;
  return {
    ...id,
    tokens,
    seconds,
    tokensPerSecond: tokens / warm,
    modelGflops,
    gemm,
    gemmRatio: modelGflops / gemm.gflops,
    parts,
    peakRssBytes: peak,
    load: [load0, loadavg()[0]],
  };
}

/** Runs one cell in a child process and returns its result line (an error result when it died without one). */
function spawnCell(spec: CellSpec): CellResult {
  const { slice: _, ...id } = spec;
  const env = { ...process.env };
  delete env.STARPO_BACKEND;
  const out = spawnSync(process.execPath, [...process.execArgv, __filename, '--child', JSON.stringify(spec)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env,
    maxBuffer: 16 * 2 ** 20,
  });
  const line = out.stdout
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{'));
  if (line) return JSON.parse(line) as CellResult;
  return { ...id, error: `child exited with ${out.signal ?? `code ${out.status}`}${out.error ? `: ${out.error.message}` : ''}` };
}

const fixed = (x: number | undefined, digits: number) => (x === undefined ? '-' : x.toFixed(digits));

function table(cells: CellResult[]): string[] {
  const rows = [
    '| model | job | backend | tokens | first s | warm s | tokens/s | model GFLOP/s | GEMM GFLOP/s (largest share) | ÷ GEMM | peak RSS GB | load |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const c of cells) {
    const head = `| ${c.model} | ${c.job} | ${c.backend} |`;
    if (c.error) {
      rows.push(`${head} ${c.error} | | | | | | | ${fixed(c.peakRssBytes && c.peakRssBytes / 1e9, 2)} | |`);
      continue;
    }
    const s = c.seconds!;
    const top = c.gemm!.shapes[0];
    const share = top.flops / c.gemm!.shapes.reduce((a, x) => a + x.flops, 0);
    rows.push(
      `${head} ${c.tokens} | ${s[0].toFixed(2)} | ${Math.min(...(s.length > 1 ? s.slice(1) : s)).toFixed(2)} | ${c.tokensPerSecond!.toFixed(0)} | ` +
        `${c.modelGflops!.toFixed(2)} | ${c.gemm!.gflops.toFixed(1)} (${top.name} ${top.m}x${top.k}x${top.n}, ${(100 * share).toFixed(0)}%) | ` +
        `${c.gemmRatio!.toFixed(2)} | ${(c.peakRssBytes! / 1e9).toFixed(2)} | ${c.load!.map((l) => l.toFixed(1)).join('-')} |`,
    );
  }
  return rows;
}

/** A comma-separated list option, each item one of `allowed`. */
function listOf<T extends string>(name: string, value: string, allowed: readonly T[]): T[] {
  const items = value.split(',').map((s) => s.trim());
  const bad = items.filter((s) => !allowed.includes(s as T));
  if (bad.length > 0)
    throw new Error(`--${name} ${value}: ${bad.join(', ')} not allowed; allowed: a comma-separated list of ${allowed.join(', ')}`);
  return items as T[];
}

function positive(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} ${JSON.stringify(value)}: allowed: an integer >= 1`);
  return n;
}

/**
 * Every cell (model x job x backend) runs in a child process of its own: tfjs keeps one engine per process,
 * a process's peak RSS only grows (and wasm's memory never shrinks), and a wasm backend that ran out of memory
 * is unusable afterwards. Cells of one model and job run one after the other, so both backends see the same load.
 * The work goes through the workers' code (src/algo/throughput.ts, as `starpo backend check`):
 * - quickstart: the tiny preset that configs/frozen_lake_solver.yaml trains (`npm start`), random init. Update:
 *   one batch of rollout_batch_size of the warm-up's solver episodes (what the policy plays after its warm
 *   start) in groups of group_size, through ppoUpdate with the config's micro-batches. Generation: the first
 *   turn of max_env_num_per_worker episodes (one rollout activity's batch), max_new_tokens each.
 * - slice: Qwen2.5-0.5B's shape with 2 layers (vocabulary 151,936, tied embeddings), random init. Update: the
 *   --slice-batch x --slice-length random-token trajectories in micro-batches of --slice-micro-batch, with the
 *   quickstart config's update settings. Generation: --slice-rows rows of --slice-prompt random tokens.
 * Generation uses the config's train sampling settings and no stop ids (every row decodes all its tokens).
 * Each job runs --rounds times: "first" includes one-off costs, "warm" is the best of the later rounds and gives
 * the rates. Model FLOPs (bench/flops.ts): the real tokens only, causal attention as the lower triangle;
 * an update = 3 x forward x ppo_epochs; generation = prefill (last position's logits) + the cached decode steps.
 * GEMM: an [m, k] x [k, n] float32 matmul (tf.matMul, warm operands) at every linear layer's shape in the job
 * (m = the tokens of a micro-batch in the update; in generation, the prefill's padded tokens and the decode steps'
 * rows), combined by FLOP share (total FLOPs / the sum of each shape's time); the table names the shape with the
 * largest share. Attention's score and value products are in the model FLOPs but not in this GEMM reference.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      child: { type: 'string' },
      'slice-batch': { type: 'string', default: '4' },
      'slice-length': { type: 'string', default: '128' },
      'slice-micro-batch': { type: 'string', default: '4' },
      'slice-rows': { type: 'string', default: '8' },
      'slice-prompt': { type: 'string', default: '128' },
      'slice-new-tokens': { type: 'string', default: '16' },
      rounds: { type: 'string', default: '2' },
      backends: { type: 'string', default: BACKENDS.join(',') },
      models: { type: 'string', default: MODELS.join(',') },
      jobs: { type: 'string', default: JOBS.join(',') },
    },
  });
  if (values.child) {
    const spec = JSON.parse(values.child) as CellSpec;
    const { slice: _, ...id } = spec;
    const result = await runCell(spec).catch(
      (err: unknown): CellResult => ({ ...id, error: err instanceof Error ? err.message : String(err) }),
    );
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  const slice: SliceSizes = {
    batch: positive('slice-batch', values['slice-batch']),
    length: positive('slice-length', values['slice-length']),
    microBatch: positive('slice-micro-batch', values['slice-micro-batch']),
    rows: positive('slice-rows', values['slice-rows']),
    prompt: positive('slice-prompt', values['slice-prompt']),
    newTokens: positive('slice-new-tokens', values['slice-new-tokens']),
  };
  if (slice.batch % slice.microBatch !== 0)
    throw new Error(`--slice-micro-batch ${slice.microBatch} does not divide --slice-batch ${slice.batch}`);
  const rounds = positive('rounds', values.rounds);
  let backends = listOf('backends', values.backends, BACKENDS);
  if (backends.includes('tensorflow') && inspectNativeBuild().state !== 'installed') {
    console.log('the native build is not installed (`starpo backend install`): measuring wasm only');
    backends = backends.filter((b) => b !== 'tensorflow');
  }
  const cells: CellResult[] = [];
  for (const model of listOf('models', values.models, MODELS)) {
    for (const job of listOf('jobs', values.jobs, JOBS)) {
      for (const backend of backends) {
        console.error(`[bench] ${model} ${job} on ${backend}`);
        cells.push(spawnCell({ backend, model, job, slice, rounds }));
      }
    }
  }
  const s = slice;
  console.log(
    `slice: Qwen2.5-0.5B shape, 2 layers; update ${s.batch} x ${s.length} tokens in micro-batches of ${s.microBatch}; ` +
      `generation ${s.rows} rows x ${s.prompt}-token prompts + ${s.newTokens} new tokens. quickstart: ${QUICKSTART}. ${rounds} rounds per cell.`,
  );
  console.log(table(cells).join('\n'));
  console.log(JSON.stringify({ bench: 'backend_throughput', slice, rounds, cells }));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
