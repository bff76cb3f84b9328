/**
 * starpo against PyTorch on this machine: one update (forward, backward, AdamW through starpo's own ppoUpdate)
 * and one generation batch (starpo's generate with a KV cache and host sampling) at Qwen2 sizes up to the whole
 * Qwen2.5-0.5B, each
 * against transformers' Qwen2ForCausalLM (float32, 2 threads; bench/vs_pytorch.py) on the same weights,
 * trajectories and contexts. Rounds are interleaved (every cell once, then again); every cell is its own process,
 * so each figure has its own peak RSS, printed with the load average around it. The update's gradient norms are
 * printed side by side: they agree when both sides do the same work.
 *
 *   node --import tsx bench/vs_pytorch.ts [--rounds 3] [--sizes tiny,h256,slice] [--jobs update,generation]
 *     [--gradient-checkpointing off|on] [--layers n] [--lora-rank r] [--backend tensorflow] [--profile]
 *
 * Sizes: tiny = the quickstart's model (105k parameters) on 64 quickstart trajectories; h256 = hidden 256, 4
 * layers (3.2M) on the same; slice = 2 of Qwen2.5-0.5B's 24 layers with its 151,936-id vocabulary on 16 random
 * trajectories of 128 tokens; full = all 24 layers (494M) on 8 random trajectories of 256 tokens in micro-batches
 * of 4 (`starpo backend check --layers 24`'s shapes), full-1024 = the same at 1024 tokens. Generation: 64 rows,
 * prompts of ~200 tokens (the quickstart trajectories' opening, random ids for the slice), 30 new tokens; 8 rows
 * of 128 random ids and 32 new tokens at the full sizes; the quickstart's train sampling settings.
 * --gradient-checkpointing on recomputes each decoder layer in the backward on both sides (starpo's
 * actor_train.model_args.disable_gradient_checkpointing=false, transformers' gradient_checkpointing_enable).
 * --layers n gives the Qwen2.5-0.5B-shaped sizes (slice, full, full-1024) n decoder layers instead of theirs: the
 * same shapes at a few layer counts give each side's memory per decoder layer. --lora-rank r trains LoRA adapters of
 * rank r on every linear layer of the decoder instead of every weight (starpo's lora_target all; PEFT's LoraConfig).
 * The PyTorch side runs in a Python venv with the pins of test/fixtures/hf/requirements.txt
 * (~/.cache/starpo/hf-venv, made on first use from PyPI); without python3 it is skipped, saying so.
 * --profile adds each side's 15 costliest ops (tf.profile kernels / torch.profiler) from one extra round.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
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
} from '../src/algo/throughput';
import { loraSettings, type RunConfig, type Trajectory } from '../src/contract';
import { initBackend } from '../src/model/backend';
import { type Qwen2Config, tinyPreset } from '../src/model/config';
import { modelFromSafetensorsFiles, modelToSafetensors } from '../src/model/hf/weights';
import { LoraAdapters } from '../src/model/lora';
import { Qwen2 } from '../src/model/qwen2';
import { charTokenizer } from '../src/model/tokenizer';
import { loadConfigFile } from '../src/preflight/load';
import { warmupDemonstrations } from '../src/rollout/demonstrations';
import { generatingArgsOf } from '../src/rollout/plan';
import { Rng } from '../src/util/rng';
import { pythonFor } from './lib/hf_venv';

const QUICKSTART = 'configs/frozen_lake_solver.yaml';
const SIZES = ['tiny', 'h256', 'slice', 'full', 'full-1024'] as const;
const JOBS = ['update', 'generation'] as const;
type Size = (typeof SIZES)[number];
type Job = (typeof JOBS)[number];
const ROWS = 64;
const PROMPT = 200;
const NEW_TOKENS = 30;
/** The Qwen2.5-0.5B-shaped sizes: decoder layers, the update's trajectories and the generation batch. */
const QWEN_SIZES: Record<
  'slice' | 'full' | 'full-1024',
  { layers: number; batch: number; microBatch: number; length: number; rows: number; prompt: number; newTokens: number }
> = {
  slice: { layers: 2, batch: 16, microBatch: 16, length: 128, rows: ROWS, prompt: PROMPT, newTokens: NEW_TOKENS },
  full: { layers: 24, batch: 8, microBatch: 4, length: 256, rows: 8, prompt: 128, newTokens: 32 },
  'full-1024': { layers: 24, batch: 8, microBatch: 4, length: 1024, rows: 8, prompt: 128, newTokens: 32 },
};

/** What both sides read from a size's folder (workload.json). */
interface Workload {
  trajectories: Array<Pick<Trajectory, 'trajId' | 'inputIds' | 'responseMask'>>;
  contexts: number[][];
  newTokens: number;
  padId: number;
  microBatch: number;
  lossAggMode: string;
  entropyLossCoef: number;
  lr: number;
  betas: [number, number];
  weightDecay: number;
  maxGradNorm: number;
  gradientCheckpointing: boolean;
  /** LoRA adapters on every decoder linear layer, or null for a full update. */
  lora: { rank: number; alpha: number } | null;
  sampling: { temperature: number; top_p: number; top_k: number; do_sample: boolean };
}

interface CellResult {
  seconds: number;
  tokens: number;
  peakRssBytes: number;
  gradNorm?: number;
  /** The update's clip + AdamW seconds. */
  optimizerSeconds?: number;
  ops?: Array<{ name: string; calls: number; ms: number }>;
  opCalls?: number;
  error?: string;
  load?: [number, number];
}

interface SizeSetup {
  cfg: Qwen2Config;
  config: RunConfig;
  trajectories: Trajectory[];
  contexts: number[][];
  padId: number;
  newTokens: number;
}

/** How both sides train: gradient checkpointing, the Qwen2.5 sizes' layers, LoRA's rank (undefined: every weight). */
interface Variant {
  checkpointing: boolean;
  layers?: number;
  loraRank?: number;
}

/** The model shape, run config, trajectories and contexts of a size, made the same way every time. */
async function sizeSetup(size: Size, { checkpointing, layers, loraRank }: Variant): Promise<SizeSetup> {
  const lora = loraRank === undefined ? [] : ['++actor_train.model_args.lora_target=all', `++actor_train.model_args.lora_rank=${loraRank}`];
  const ckpt = `actor_train.model_args.disable_gradient_checkpointing=${!checkpointing}`;
  if (size !== 'tiny' && size !== 'h256') {
    const s = QWEN_SIZES[size];
    const cfg = qwen25HalfBShape(layers ?? s.layers);
    return {
      cfg,
      config: atLength(loadConfigFile(QUICKSTART, [...batchOverrides(s), ckpt, ...lora]).config, s.length),
      trajectories: randomTrajectories({
        count: s.batch,
        length: s.length,
        vocab: cfg.vocab_size,
        groupSize: groupSizeFor(s.batch),
        seed: 1,
      }),
      contexts: randomContexts({ rows: s.rows, prompt: s.prompt, vocab: cfg.vocab_size, seed: 1 }),
      padId: 0,
      newTokens: s.newTokens,
    };
  }
  const { config } = loadConfigFile(QUICKSTART, [ckpt, ...lora]);
  const tokenizer = charTokenizer();
  const tiny = tinyPreset(tokenizer.vocabSize);
  const cfg = size === 'tiny' ? tiny : { ...tiny, hidden_size: 256, intermediate_size: 768, num_hidden_layers: 4 };
  const batch = config.rollout_batch_size;
  const group = config.train_env_manager.group_size;
  const { episodes } = await warmupDemonstrations({ ...config, warmup: { ...config.warmup, num_episodes: batch } }, tokenizer);
  // Solver demonstrations all succeed; spread scores give every group in-group variance, so the advantages are not 0.
  const rng = new Rng(1, 'vs-pytorch', 'scores');
  const trajectories = episodes.map((t, i) => ({ ...t, trajGroupId: `FrozenLake_${Math.floor(i / group)}_0_0`, episodeScore: rng.next() }));
  const contexts = Array.from({ length: ROWS }, (_, i) => {
    const ids = trajectories[i % trajectories.length].inputIds;
    return ids.slice(0, Math.min(PROMPT, ids.length));
  });
  return { cfg, config, trajectories, contexts, padId: tokenizer.padId, newTokens: NEW_TOKENS };
}

/** Writes a size's folder once: config.json, model.safetensors (seeded random init) and workload.json. */
async function prepare(size: Size, dir: string, variant: Variant): Promise<void> {
  if (existsSync(join(dir, 'workload.json'))) return;
  const { cfg, config, trajectories, contexts, padId, newTokens } = await sizeSetup(size, variant);
  const lora = loraSettings(config.actor_train.model_args);
  const model = Qwen2.random(cfg, 1);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'model.safetensors'), await modelToSafetensors(model));
  model.dispose();
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      architectures: ['Qwen2ForCausalLM'],
      hidden_act: 'silu',
      attention_dropout: 0,
      use_sliding_window: false,
      eos_token_id: cfg.vocab_size - 1,
      ...cfg,
    }),
  );
  const args = config.actor_train.training_args;
  const gen = generatingArgsOf(config, 'train');
  const w: Workload = {
    trajectories: trajectories.map(({ trajId, inputIds, responseMask }) => ({ trajId, inputIds, responseMask })),
    contexts,
    newTokens,
    padId,
    microBatch: args.per_device_train_batch_size,
    lossAggMode: config.loss_agg_mode,
    entropyLossCoef: config.entropy_loss_coef,
    lr: args.learning_rate,
    betas: [args.adam_beta1, args.adam_beta2],
    weightDecay: args.weight_decay,
    maxGradNorm: config.max_grad_norm,
    gradientCheckpointing: variant.checkpointing,
    lora: lora ? { rank: lora.rank, alpha: lora.alpha } : null,
    sampling: { temperature: gen.temperature, top_p: gen.top_p, top_k: gen.top_k, do_sample: gen.do_sample },
  };
  writeFileSync(join(dir, 'workload.json'), JSON.stringify(w));
}

/** One starpo cell, in this process (a child): the job once on the size's weights; the first update writes advantages.json. */
async function starpoCell(size: Size, job: Job, dir: string, backend: string, profile: boolean, variant: Variant): Promise<CellResult> {
  await initBackend(backend);
  const { cfg, config, trajectories, contexts, padId, newTokens } = await sizeSetup(size, variant);
  const model = modelFromSafetensorsFiles(cfg, [join(dir, 'model.safetensors')]);
  const lora = loraSettings(config.actor_train.model_args);
  if (lora) model.setAdapters(LoraAdapters.init(cfg, lora, 1, (name) => model.toNamedTensors().get(name) as tf.Tensor));
  const run = async (): Promise<CellResult> => {
    if (job === 'generation') {
      const t = timeGeneration({ model, config, contexts, newTokens, seed: 1 });
      return { seconds: t.seconds, tokens: t.tokens, peakRssBytes: 0 };
    }
    const t = await timeUpdate({ model, config, trajectories, padId });
    const advantages = Object.fromEntries(
      Object.entries(t.scores.trajectories)
        .filter(([, s]) => s.kept)
        .map(([id, s]) => [id, s.advantage]),
    );
    if (!existsSync(join(dir, 'advantages.json'))) writeFileSync(join(dir, 'advantages.json'), JSON.stringify(advantages));
    return {
      seconds: t.seconds,
      tokens: t.tokens,
      peakRssBytes: 0,
      gradNorm: t.metrics['actor/grad_norm'],
      optimizerSeconds: t.parts.optimizer,
    };
  };
  let result: CellResult;
  if (profile) {
    let inner: CellResult | undefined;
    const info = await tf.profile(async () => {
      inner = await run();
    });
    const byName = new Map<string, { calls: number; ms: number }>();
    for (const k of info.kernels) {
      const e = byName.get(k.name) ?? { calls: 0, ms: 0 };
      e.calls++;
      e.ms += typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : 0;
      byName.set(k.name, e);
    }
    result = {
      ...inner!,
      opCalls: info.kernels.length,
      ops: [...byName]
        .map(([name, e]) => ({ name, ...e }))
        .sort((a, b) => b.ms - a.ms)
        .slice(0, 15),
    };
  } else result = await run();
  model.dispose();
  return { ...result, peakRssBytes: peakRssBytes() };
}

/** Runs one cell in a child process; its JSON line, or an error result. */
function spawnCell(cmd: string, args: string[]): CellResult {
  const load0 = loadavg()[0];
  const out = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 2 ** 20 });
  const line = out.stdout
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{'));
  const load: [number, number] = [load0, loadavg()[0]];
  if (line) return { ...(JSON.parse(line) as CellResult), load };
  const why = (out.stderr ?? '').trim().split('\n').slice(-3).join(' / ');
  return { seconds: Number.NaN, tokens: 0, peakRssBytes: 0, load, error: `exit ${out.signal ?? out.status}: ${why.slice(0, 300)}` };
}

const fmt = (x: number | undefined, digits: number) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits));
const gb = (bytes: number) => (bytes / 2 ** 30).toFixed(2);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '3' },
      sizes: { type: 'string', default: SIZES.join(',') },
      jobs: { type: 'string', default: JOBS.join(',') },
      backend: { type: 'string', default: 'tensorflow' },
      profile: { type: 'boolean', default: false },
      'gradient-checkpointing': { type: 'string', default: 'off' },
      layers: { type: 'string' },
      'lora-rank': { type: 'string' },
      child: { type: 'string' },
    },
  });
  const ckptFlag = values['gradient-checkpointing'];
  if (ckptFlag !== 'on' && ckptFlag !== 'off') throw new Error(`--gradient-checkpointing ${ckptFlag}: allowed: on, off`);
  const checkpointing = ckptFlag === 'on';
  const layers = values.layers === undefined ? undefined : Number(values.layers);
  if (layers !== undefined && !(Number.isInteger(layers) && layers >= 1 && layers <= 24))
    throw new Error(`--layers ${values.layers}: allowed: an integer 1..24`);
  const loraRank = values['lora-rank'] === undefined ? undefined : Number(values['lora-rank']);
  if (loraRank !== undefined && !(Number.isInteger(loraRank) && loraRank >= 1))
    throw new Error(`--lora-rank ${values['lora-rank']}: allowed: an integer >= 1`);
  const variant: Variant = { checkpointing, layers, loraRank };
  if (values.child) {
    const [size, job, dir, backend, profile] = JSON.parse(values.child) as [Size, Job | 'prepare', string, string, boolean];
    if (job === 'prepare') await prepare(size, dir, variant);
    else console.log(JSON.stringify(await starpoCell(size, job, dir, backend, profile, variant)));
    return;
  }
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds ${values.rounds}: allowed: an integer >= 1`);
  const sizes = values.sizes.split(',') as Size[];
  const jobs = values.jobs.split(',') as Job[];
  for (const s of sizes) if (!SIZES.includes(s)) throw new Error(`--sizes: ${s} is not one of ${SIZES.join(', ')}`);
  for (const j of jobs) if (!JOBS.includes(j)) throw new Error(`--jobs: ${j} is not one of ${JOBS.join(', ')}`);
  const python = pythonFor();
  const root = mkdtempSync(join(tmpdir(), 'starpo-vs-pytorch-'));
  try {
    const child = (size: Size, job: Job | 'prepare', profile: boolean) => [
      ...process.execArgv,
      __filename,
      '--gradient-checkpointing',
      ckptFlag,
      ...(layers === undefined ? [] : ['--layers', String(layers)]),
      ...(loraRank === undefined ? [] : ['--lora-rank', String(loraRank)]),
      '--child',
      JSON.stringify([size, job, join(root, size), values.backend, profile]),
    ];
    // A child writes each folder, so this process never holds a 2 GB model while the cells measure theirs.
    for (const size of sizes) {
      const r = spawnSync(process.execPath, child(size, 'prepare', false), { stdio: 'inherit' });
      if (r.status !== 0) throw new Error(`preparing ${size} failed (exit ${r.signal ?? r.status})`);
    }
    const results = new Map<string, CellResult[]>();
    const add = (key: string, r: CellResult) => results.set(key, [...(results.get(key) ?? []), r]);
    const starpo = (size: Size, job: Job, profile: boolean) => spawnCell(process.execPath, child(size, job, profile));
    const torch = (size: Size, job: Job, profile: boolean) =>
      spawnCell(python!, [join(__dirname, 'vs_pytorch.py'), join(root, size), job, ...(profile ? ['--profile'] : [])]);
    for (let r = 0; r < rounds; r++) {
      for (const size of sizes) {
        for (const job of jobs) {
          // starpo first: its first update writes the advantages the PyTorch update uses.
          add(`${size} ${job} starpo`, starpo(size, job, false));
          if (python) add(`${size} ${job} pytorch`, torch(size, job, false));
          process.stderr.write(`round ${r + 1}/${rounds}: ${size} ${job} done\n`);
        }
      }
    }
    console.log(
      `\nstarpo (${values.backend}) vs PyTorch ${python ? '' : '(skipped) '}on this host, gradient checkpointing ${ckptFlag}${layers === undefined ? '' : `, ${layers} decoder layers`}${loraRank === undefined ? '' : `, LoRA rank ${loraRank} on every linear layer (adapters only)`}, ${rounds} interleaved rounds; best round shown, all rounds in brackets`,
    );
    console.log('| job | size | side | seconds (rounds) | optimizer s (rounds) | tokens/s | peak RSS GiB | load | grad norm |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const [key, rs] of results) {
      const [size, job, side] = key.split(' ');
      const ok = rs.filter((x) => !x.error);
      const best = ok.length ? ok.reduce((a, b) => (b.seconds < a.seconds ? b : a)) : undefined;
      const loads = rs.flatMap((x) => x.load ?? []);
      const cells = best
        ? [
            `${fmt(best.seconds, 2)} (${ok.map((x) => fmt(x.seconds, 2)).join(', ')})`,
            job === 'update' ? ok.map((x) => fmt(x.optimizerSeconds, 2)).join(', ') : '',
            fmt(best.tokens / best.seconds, 1),
            gb(Math.max(...ok.map((x) => x.peakRssBytes))),
            `${fmt(Math.min(...loads), 1)}-${fmt(Math.max(...loads), 1)}`,
            job === 'update' ? ok.map((x) => fmt(x.gradNorm, 6)).join(', ') : '',
          ]
        : [rs[0].error ?? 'failed', '', '-', '-', '-', ''];
      console.log(`| ${job} | ${size} | ${side} | ${cells.join(' | ')} |`);
    }
    if (values.profile) {
      for (const size of sizes) {
        for (const job of jobs) {
          for (const [side, r] of [['starpo', starpo(size, job, true)], ...(python ? [['pytorch', torch(size, job, true)]] : [])] as Array<
            [string, CellResult]
          >) {
            console.log(`\nprofile: ${size} ${job} ${side}: ${r.opCalls ?? '-'} op calls; costliest ops (self time ms, calls)`);
            for (const op of r.ops ?? [])
              console.log(`  ${op.name.padEnd(40)} ${fmt(op.ms, 1).padStart(9)} ${String(op.calls).padStart(7)}`);
            if (r.error) console.log(`  ${r.error}`);
          }
        }
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
