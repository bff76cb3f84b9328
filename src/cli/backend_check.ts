/**
 * `starpo backend check`: the device TensorFlow computes on, and the time of one update and one rollout
 * generation batch of a Qwen2.5-0.5B-shaped model (random init) on this process's backend, so a host's figures
 * come from one command. The work goes through the workers' own code (src/algo/throughput.ts) with the update
 * and sampling settings of a config (default: the quickstart's). Each piece runs `rounds` times: the first
 * includes one-off costs (kernel set-up, first allocations), later ones show the steady rate.
 */

import type * as tf from '@tensorflow/tfjs';
import {
  atLength,
  batchOverrides,
  groupSizeFor,
  PhasePeakRss,
  qwen25HalfBShape,
  randomContexts,
  randomTrajectories,
  type Timed,
  timeGeneration,
  timeUpdate,
  type UpdateParts,
} from '../algo/throughput';
import { type GeneratingArgs, loraSettings } from '../contract';
import { backendInfo, initBackend } from '../model/backend';
import { defaultBackend, hostBackends } from '../model/backend_choice';
import { countParams } from '../model/config';
import { LoraAdapters } from '../model/lora';
import { outOfMemoryOf } from '../model/out_of_memory';
import { Qwen2 } from '../model/qwen2';
import { loadConfigFile } from '../preflight/load';
import { generatingArgsOf } from '../rollout/plan';
import { BadInputError } from './exit_codes';

/** Qwen2.5-0.5B's decoder layers: the check's default on a GPU. */
export const QWEN25_LAYERS = 24;
/** The check's default on a CPU: a slice whose update fits a host of a few tens of GB (the whole model's does not). */
export const CPU_CHECK_LAYERS = 2;

/** The sizes `backend check` runs at. */
export interface CheckOptions {
  /** Decoder layers of the Qwen2.5-0.5B shape; unset: QWEN25_LAYERS on a GPU, CPU_CHECK_LAYERS on a CPU. */
  layers?: number;
  /** Vocabulary size (Qwen2.5's is 151,936): the embedding and lm_head, the largest matrices at few layers. */
  vocab: number;
  /** Trajectories in the update, of `length` tokens each (half prompt, half response). */
  batch: number;
  length: number;
  /** Trajectories per forward/backward pass (per_device_train_batch_size). */
  microBatch: number;
  /** Generation: rows, prompt tokens per row, new tokens per row. */
  rows: number;
  prompt: number;
  newTokens: number;
  rounds: number;
  /** The config whose update and sampling settings are used. */
  config: string;
  /** Recompute each decoder layer in the update's backward pass (sets actor_train.model_args.disable_gradient_checkpointing). */
  gradientCheckpointing: boolean;
  /** LoRA adapters instead of training every weight (sets actor_train.model_args.lora_target and lora_rank). */
  loraTarget?: string;
  loraRank?: number;
}

/** What `backend check` measured. */
export interface CheckResult {
  backend: string;
  device: string;
  model: { shape: string; layers: number; vocab: number; params: number };
  config: string;
  update: {
    batch: number;
    length: number;
    microBatch: number;
    advEstimator: string;
    gradientCheckpointing: boolean;
    /** The LoRA adapters trained instead of every weight, or null. */
    lora: { target: string; rank: number; alpha: number; trainableParams: number } | null;
    rounds: Array<Timed & { parts: UpdateParts }>;
  };
  generation: { rows: number; prompt: number; newTokens: number; sampling: GeneratingArgs; rounds: Timed[] };
  /** The process's peak RSS, bytes. */
  peakRssBytes: number;
  /** Peak RSS of each phase (random init, all generation rounds, all update rounds), bytes; cumulative when not `perPhase`. */
  phasePeakRssBytes: { init: number; generation: number; update: number; perPhase: boolean };
}

/**
 * Initializes the backend a worker would use (STARPO_BACKEND, which `--backend` sets, else the update role's
 * default, as a worker serving both roles picks), then times `rounds` rollout generation batches and `rounds` updates.
 * @throws NativeBackendError when the requested native build is missing; Error saying how to shrink the
 *   model when the wasm backend runs out of memory
 */
export async function backendCheck(o: CheckOptions, log: (line: string) => void): Promise<CheckResult> {
  checkSizes(o);
  const checkpointing = `actor_train.model_args.disable_gradient_checkpointing=${!o.gradientCheckpointing}`;
  const lora =
    o.loraTarget === undefined
      ? []
      : [`++actor_train.model_args.lora_target=${o.loraTarget}`, `++actor_train.model_args.lora_rank=${o.loraRank ?? 8}`];
  const config = atLength(loadConfigFile(o.config, [...batchOverrides(o), checkpointing, ...lora]).config, o.length);
  const loraSet = loraSettings(config.actor_train.model_args);
  await initBackend(defaultBackend('update', hostBackends()));
  const { backend, device } = backendInfo();
  log(`backend ${backend}, device ${device}`);
  const layers = o.layers ?? (device === 'CPU' ? CPU_CHECK_LAYERS : QWEN25_LAYERS);
  if (o.layers === undefined && device === 'CPU')
    log(`no GPU: checking ${layers} of Qwen2.5-0.5B's ${QWEN25_LAYERS} layers (--layers ${QWEN25_LAYERS} for the whole model)`);
  const shape = qwen25HalfBShape(layers, o.vocab);
  const trajectories = randomTrajectories({
    count: o.batch,
    length: o.length,
    vocab: shape.vocab_size,
    groupSize: groupSizeFor(o.batch),
    seed: 1,
  });
  const contexts = randomContexts({ rows: o.rows, prompt: o.prompt, vocab: shape.vocab_size, seed: 1 });
  const result: CheckResult = {
    backend,
    device,
    model: { shape: 'Qwen2.5-0.5B', layers, vocab: o.vocab, params: countParams(shape) },
    config: o.config,
    update: {
      batch: o.batch,
      length: o.length,
      microBatch: o.microBatch,
      advEstimator: config.adv_estimator,
      gradientCheckpointing: o.gradientCheckpointing,
      lora: null,
      rounds: [],
    },
    generation: { rows: o.rows, prompt: o.prompt, newTokens: o.newTokens, sampling: generatingArgsOf(config, 'train'), rounds: [] },
    peakRssBytes: 0,
    phasePeakRssBytes: { init: 0, generation: 0, update: 0, perPhase: true },
  };
  const peaks = new PhasePeakRss();
  let doing = 'random init';
  let model: Qwen2 | undefined;
  try {
    const m = await peaks.measure('init', () => {
      const random = Qwen2.random(shape, 1);
      if (loraSet) random.setAdapters(LoraAdapters.init(shape, loraSet, 1, (name) => random.toNamedTensors().get(name) as tf.Tensor));
      return random;
    });
    model = m;
    if (loraSet) {
      const trainableParams = [...m.trainableVariables().values()].reduce((s, v) => s + v.size, 0);
      result.update.lora = { target: o.loraTarget as string, rank: loraSet.rank, alpha: loraSet.alpha, trainableParams };
    }
    await peaks.measure('generation', () => {
      for (let r = 1; r <= o.rounds; r++) {
        doing = 'rollout generation batch';
        log(`generation round ${r}/${o.rounds}: ${o.rows} rows x ${o.newTokens} new tokens`);
        result.generation.rounds.push(timeGeneration({ model: m, config, contexts, newTokens: o.newTokens, seed: 1 }));
      }
    });
    await peaks.measure('update', async () => {
      for (let r = 1; r <= o.rounds; r++) {
        doing = 'update';
        log(`update round ${r}/${o.rounds}: ${o.batch} x ${o.length} tokens`);
        result.update.rounds.push(await timeUpdate({ model: m, config, trajectories, padId: 0 }));
      }
    });
  } catch (err) {
    throw outOfMemory(err, doing, { ...o, layers });
  } finally {
    model?.dispose();
  }
  const { init = 0, generation = 0, update = 0 } = peaks.phases;
  result.phasePeakRssBytes = { init, generation, update, perPhase: peaks.resets };
  result.peakRssBytes = peaks.overall;
  return result;
}

/**
 * Refuses sizes the update or the model cannot take, before anything loads.
 * @throws BadInputError (exit 2) naming the option, its value and what is allowed
 */
function checkSizes(o: CheckOptions): void {
  if (o.loraRank !== undefined && o.loraTarget === undefined) {
    throw new BadInputError(`--lora-rank ${o.loraRank} without --lora-target; allowed: with --lora-target (e.g. all), which turns LoRA on`);
  }
  if (o.batch % o.microBatch !== 0) {
    throw new BadInputError(
      `--micro-batch ${o.microBatch} does not divide --batch ${o.batch}; allowed: a divisor of the batch (the update makes one optimizer step)`,
    );
  }
  const max = qwen25HalfBShape(1).max_position_embeddings;
  if (o.length > max) throw new BadInputError(`--length ${o.length} is longer than the model's ${max} positions; allowed: 2..${max}`);
  if (o.prompt + o.newTokens > max)
    throw new BadInputError(`--prompt ${o.prompt} + --new-tokens ${o.newTokens} exceed the model's ${max} positions`);
}

/** `err`, or when it is the backend running out of memory, an error saying so and how to shrink the check. */
function outOfMemory(err: unknown, doing: string, o: CheckOptions & { layers: number }): unknown {
  const oom = outOfMemoryOf(err);
  if (!oom) return err;
  return new Error(
    `${oom.message}, in the ${doing} of the ${o.layers}-layer model with a ${o.vocab}-token vocabulary; ` +
      `shrink the model or the batch (--layers, --vocab, --batch, --length, --rows)${oom.details.backend === 'wasm' ? ' or use the native backend (--backend tensorflow)' : ''}`,
  );
}

/** Readable lines for a check result. */
export function formatBackendCheck(r: CheckResult): string[] {
  const rate = (t: Timed) => `${t.seconds.toFixed(2)} s, ${t.tokens} tokens, ${t.tokensPerSecond.toFixed(1)} tokens/s`;
  const parts = (t: Timed & { parts?: UpdateParts }) =>
    t.parts
      ? ` (${Object.entries(t.parts)
          .map(([k, v]) => `${k} ${v.toFixed(2)} s`)
          .join(', ')})`
      : '';
  const rounds = (ts: Array<Timed & { parts?: UpdateParts }>) =>
    ts.map((t, i) => `  round ${i + 1}${i === 0 ? ' (first)' : ''}: ${rate(t)}${parts(t)}`);
  const u = r.update;
  const g = r.generation;
  const p = r.phasePeakRssBytes;
  const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(2)} GiB`;
  return [
    `backend ${r.backend}, device ${r.device}`,
    `model: ${r.model.shape} shape, ${r.model.layers} layer${r.model.layers === 1 ? '' : 's'}, vocabulary ${r.model.vocab}, ${r.model.params.toLocaleString('en-US')} parameters, random init`,
    `update: ${u.batch} trajectories x ${u.length} tokens, micro-batches of ${u.microBatch}, one AdamW step, gradient checkpointing ${u.gradientCheckpointing ? 'on' : 'off'} (${u.advEstimator}, settings of ${r.config})`,
    ...(u.lora
      ? [
          `  LoRA adapters only: lora_target ${u.lora.target}, rank ${u.lora.rank}, alpha ${u.lora.alpha}, ${u.lora.trainableParams.toLocaleString('en-US')} trainable parameters`,
        ]
      : []),
    ...rounds(u.rounds),
    `rollout batch: ${g.rows} rows, ${g.prompt}-token prompts, ${g.newTokens} new tokens each (KV cache; temperature ${g.sampling.temperature}, top_p ${g.sampling.top_p}, top_k ${g.sampling.top_k})`,
    ...rounds(g.rounds),
    `peak RSS ${gib(r.peakRssBytes)}; ${r.phasePeakRssBytes.perPhase ? 'by phase' : 'cumulative at the end of each phase'}: random init ${gib(p.init)}, generation ${gib(p.generation)}, update ${gib(p.update)}`,
  ];
}
