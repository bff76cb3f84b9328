/**
 * Timing one update and one rollout generation batch through the code the workers run: `ppoUpdate` with a
 * fresh AdamW as the update activity builds it (forward, backward and optimizer over the config's
 * micro-batches), and `generate` with the train split's generating_args and a KV cache, as a rollout turn
 * generates for its active episodes. `starpo backend check` and bench/backend_throughput.ts both time through
 * here. It lives at the algo level because it calls ppoUpdate.
 */
import { writeFileSync } from 'node:fs';
import type { RunConfig, Trajectory, TrajectoryScoresFile } from '../contract';
import { type Qwen2Config, validateQwen2Config } from '../model/config';
import { generate } from '../model/generate';
import type { Qwen2 } from '../model/qwen2';
import { ValueModel } from '../model/value_model';
import { generatingArgsOf } from '../rollout/plan';
import { Rng } from '../util/rng';
import { AdamW } from './adamw';
import { klControllerFromConfig } from './kl';
import { needsReference, ppoUpdate } from './update';

/**
 * Qwen2.5-0.5B's architecture (its config.json) with `layers` decoder layers (the real model has 24):
 * hidden 896, 14 heads, 2 kv heads, intermediate 4864, tied embeddings, a vocabulary of `vocab` (151,936).
 */
export function qwen25HalfBShape(layers = 24, vocab = 151936): Qwen2Config {
  return validateQwen2Config({
    model_type: 'qwen2',
    vocab_size: vocab,
    hidden_size: 896,
    intermediate_size: 4864,
    num_hidden_layers: layers,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    max_position_embeddings: 32768,
    rope_theta: 1000000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
    torch_dtype: 'float32',
  });
}

/**
 * `count` trajectories of `length` random token ids (ids 1..vocab-1) for a model with no env: the first half
 * is the prompt, the second the response. They form groups of `groupSize` with distinct scores, so the
 * StarPO-S filter and the group normalisation see in-group variance. The throughput of a model does not
 * depend on which ids it reads.
 */
export function randomTrajectories(opts: { count: number; length: number; vocab: number; groupSize: number; seed: number }): Trajectory[] {
  const rng = new Rng(opts.seed, 'throughput', 'trajectories');
  const prompt = Math.ceil(opts.length / 2);
  return Array.from({ length: opts.count }, (_, i) => {
    const group = Math.floor(i / opts.groupSize);
    const trajGroupId = `Random_${group}_0_0`;
    return {
      trajGroupId,
      trajId: `${trajGroupId}_${i}`,
      tag: 'Random',
      groupId: group,
      envId: i,
      seed: group,
      split: 'train' as const,
      step: 0,
      inputIds: Array.from({ length: opts.length }, () => 1 + rng.int(opts.vocab - 1)),
      responseMask: Array.from({ length: opts.length }, (_, j) => (j < prompt ? 0 : 1)),
      sampleLogprobs: new Array<number>(opts.length).fill(0),
      turns: [],
      episodeScore: rng.next(),
      success: false,
      truncated: false,
    };
  });
}

/** `rows` generation contexts of `prompt` random token ids (ids 1..vocab-1). */
export function randomContexts(opts: { rows: number; prompt: number; vocab: number; seed: number }): number[][] {
  const rng = new Rng(opts.seed, 'throughput', 'contexts');
  return Array.from({ length: opts.rows }, () => Array.from({ length: opts.prompt }, () => 1 + rng.int(opts.vocab - 1)));
}

/** Env groups of up to 8 trajectories (the quickstart's group_size): the largest divisor of `batch` <= 8. */
export function groupSizeFor(batch: number): number {
  let g = Math.min(8, batch);
  while (batch % g !== 0) g--;
  return g;
}

/**
 * Config overrides for an update of `batch` trajectories in micro-batches of `microBatch`, in one optimizer
 * step as the quickstart makes per pipeline step, in env groups of groupSizeFor(batch). The length goes in
 * through atLength, after loading.
 */
export function batchOverrides(o: { batch: number; microBatch: number }): string[] {
  const group = groupSizeFor(o.batch);
  return [
    `rollout_batch_size=${o.batch}`,
    `train_env_manager.num_env_groups=${o.batch / group}`,
    `train_env_manager.group_size=${group}`,
    `train_env_manager.num_groups_partition=[${o.batch / group}]`,
    `actor_train.training_args.per_device_train_batch_size=${o.microBatch}`,
    `actor_train.training_args.gradient_accumulation_steps=${Math.ceil(o.batch / o.microBatch)}`,
  ];
}

/**
 * A loaded config padding updates to `length` tokens. Set after loading rather than as an override: loading
 * checks sequence_length against the first turns of the config's envs, which synthetic trajectories never play.
 */
export function atLength(config: RunConfig, length: number): RunConfig {
  return { ...config, sequence_length: length };
}

/** One timed piece of work. */
export interface Timed {
  seconds: number;
  /** Tokens it processed: every token of the trajectories (update), the new tokens (generation). */
  tokens: number;
  tokensPerSecond: number;
}

const timed = (seconds: number, tokens: number): Timed => ({ seconds, tokens, tokensPerSecond: tokens / seconds });

/** The parts of an update's time: the no-gradient pass, then forward, backward and clipping + AdamW of the optimizer steps. */
const UPDATE_PARTS = ['prepass', 'forward', 'backward', 'optimizer'] as const;
export type UpdateParts = Record<(typeof UPDATE_PARTS)[number], number>;

/**
 * Runs one update (pipeline step 0) on `model` in place and times it: optimizers as the update activity
 * makes them (AdamW with the training_args' betas and weight decay) at the constant learning_rate, a critic
 * from the policy when adv_estimator is gae, the model itself (a LoRA model's base view) as the frozen reference
 * when a KL term needs one.
 * @returns the time and the tokens of all trajectories, the seconds of its parts (ppoUpdate's time/update/* metrics),
 *   and ppoUpdate's metrics and trajectory scores
 */
export async function timeUpdate(opts: {
  model: Qwen2;
  config: RunConfig;
  trajectories: Trajectory[];
  padId: number;
}): Promise<Timed & { parts: UpdateParts; metrics: Record<string, number>; scores: TrajectoryScoresFile }> {
  const { config, model } = opts;
  const adamW = (a: RunConfig['critic']['training_args']) =>
    new AdamW({ betas: [a.adam_beta1, a.adam_beta2], eps: 1e-8, weightDecay: a.weight_decay });
  const critic = config.adv_estimator === 'gae' ? ValueModel.fromPolicy(model) : null;
  const actorArgs = config.actor_train.training_args;
  // Their moments are tensors on the backend: freed below, or every round would keep its own.
  const optimizers = { actor: adamW(actorArgs), critic: critic ? adamW(config.critic.training_args) : null };
  try {
    const started = performance.now();
    const { metrics, scores } = await ppoUpdate({
      actor: { model, optimizer: optimizers.actor, lr: () => actorArgs.learning_rate },
      critic: critic ? { model: critic, optimizer: optimizers.critic!, lr: () => config.critic.training_args.learning_rate } : null,
      reference: needsReference(config) ? (model.adapters() ? model.baseView() : model) : null,
      klController: klControllerFromConfig(config),
      trajectories: opts.trajectories,
      config,
      step: 0,
      padId: opts.padId,
    });
    const seconds = (performance.now() - started) / 1000;
    const parts = Object.fromEntries(UPDATE_PARTS.map((p) => [p, metrics[`time/update/${p}`]])) as UpdateParts;
    return {
      ...timed(
        seconds,
        opts.trajectories.reduce((s, t) => s + t.inputIds.length, 0),
      ),
      parts,
      metrics,
      scores,
    };
  } finally {
    critic?.dispose();
    optimizers.actor.dispose();
    optimizers.critic?.dispose();
  }
}

/**
 * Generates `newTokens` tokens for every context in one batched `generate` call (KV cache, host sampling)
 * with the config's train generating_args and no stop ids, so every row decodes its whole budget.
 */
export function timeGeneration(opts: { model: Qwen2; config: RunConfig; contexts: number[][]; newTokens: number; seed: number }): Timed {
  const args = generatingArgsOf(opts.config, 'train');
  const started = performance.now();
  const out = generate(opts.model, opts.contexts, {
    maxNewTokens: opts.newTokens,
    temperature: args.temperature,
    topP: args.top_p,
    topK: args.top_k,
    doSample: args.do_sample,
    stopIds: [],
    rngs: opts.contexts.map((_, i) => new Rng(opts.seed, 'throughput', i)),
  });
  return timed(
    (performance.now() - started) / 1000,
    out.tokens.reduce((s, t) => s + t.length, 0),
  );
}

/** This process's peak resident set size so far, in bytes. */
export function peakRssBytes(): number {
  return process.resourceUsage().maxRSS * 1024;
}

/**
 * Peak RSS phase by phase. Linux resets a process's peak (VmHWM, and getrusage's maxrss with it) when "5" is written
 * to /proc/self/clear_refs, so each phase's peak is its own; where that is refused the figures are cumulative
 * (`resets` false). `overall` keeps the process's peak across the resets.
 */
export class PhasePeakRss {
  readonly phases: Record<string, number> = {};
  overall = peakRssBytes();
  resets = true;

  /** Runs `f` as phase `name` and records its peak RSS in bytes. */
  async measure<T>(name: string, f: () => Promise<T> | T): Promise<T> {
    this.overall = Math.max(this.overall, peakRssBytes());
    try {
      writeFileSync('/proc/self/clear_refs', '5');
    } catch {
      this.resets = false;
    }
    try {
      return await f();
    } finally {
      this.phases[name] = Math.max(this.phases[name] ?? 0, peakRssBytes());
      this.overall = Math.max(this.overall, this.phases[name]);
    }
  }
}
