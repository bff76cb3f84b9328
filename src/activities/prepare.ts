/**
 * The run's records on task queue "starpo-update": `prepareRun` stores run.json and provides the step-0
 * policy (the warm-up), `loadRun` reads run.json back (a run continued as new carries only its id and
 * checkpoint), `writeMetrics` stores a step's scalars at runs/<run>/metrics/step-N.json.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { log } from '@temporalio/activity';
import type * as tf from '@tensorflow/tfjs';
import { AdamW } from '../algo/adamw';
import { sftTrain, warmupSchedule } from '../algo/sft';
import type {
  LoraSettings,
  ObjectRef,
  PrepareRunOutput,
  RunConfig,
  RunSpec,
  StepMetrics,
  Trajectory,
  WriteMetricsInput,
} from '../contract';
import { ConfigError, EnvFailureError, gradientCheckpointing, loraSettings } from '../contract';
import { TINY_PRESET, tinyPreset } from '../model/config';
import { PretrainedFolderError, pretrainedIdentity } from '../model/hf/folder';
import { adaptersFromFolder } from '../model/hf/peft';
import { modelFromFolder } from '../model/hf/weights';
import { LoraAdapters } from '../model/lora';
import { Qwen2 } from '../model/qwen2';
import { type ChatTokenizer, charTokenizer } from '../model/tokenizer';
import { warmupDemonstrations } from '../rollout/demonstrations';
import { readCheckpoint, verifyOnlySafetensors, writeInitial, writeLatest } from '../storage/checkpoint';
import { isUnusable } from '../storage/errors';
import { checkpointPrefix, metricsKey, runKey, warmupPrefix } from '../storage/keys';
import { disposeCheckpoint, loadCheckpoint, saveCheckpoint, trainerStateOf } from '../storage/policy_checkpoint';
import { deriveSeed } from '../util/rng';
import { type ActivityRuntime, heartbeat } from './runtime';
import { setWatchdogLimit } from './watchdog';

/** Bump when the warm-up recipe changes, so old artifacts are not reused. */
const WARMUP_VERSION = 1;

/**
 * The settings the warm-up result depends on; their hash names the warm-up folder. `pretrain` is the
 * preset name, or for a folder the sha256 of each of its files (the contents, not the path).
 */
function warmupIdentity(config: RunConfig, pretrain: string | Record<string, string>) {
  const tags = [...new Set([...config.train_env_manager.tags, ...config.val_env_manager.tags])].sort();
  return {
    version: WARMUP_VERSION,
    pretrain,
    config_overrides: config.config_overrides,
    seed: config.seed,
    warmup: config.warmup,
    sequence_length: config.sequence_length,
    max_new_tokens: config.actor_infer.generating_args.max_new_tokens,
    envs: Object.fromEntries(tags.map((t) => [t, config.custom_envs[t]])),
    trainTags: config.train_env_manager.tags,
    partition: config.train_env_manager.num_groups_partition,
  };
}

/**
 * Trains `model` in place on the warm-up demonstrations stored under `prefix` (made and stored on
 * first use); returns warmup/* metrics (final loss in nats per response token, seconds, episodes,
 * success rate of the demonstrations).
 */
async function sftWarmup(
  rt: ActivityRuntime,
  config: RunConfig,
  prefix: string,
  model: Qwen2,
  tokenizer: ChatTokenizer,
): Promise<Record<string, number>> {
  const started = performance.now();
  const key = `${prefix}episodes.jsonl.gz`;
  let episodes = (await rt.store.exists(key)) ? await rt.store.getJsonlGz<Trajectory>(key) : null;
  if (!episodes) {
    const played = await warmupDemonstrations(config, tokenizer);
    for (const error of played.errors) log.warn(`warm-up demonstrations: env failure: ${error}`);
    if (played.episodes.length === 0)
      throw new EnvFailureError(
        `warm-up: every demonstration episode failed, replacements included; the first: ${played.errors[0] ?? 'none recorded'}`,
      );
    episodes = played.episodes;
    await rt.store.putJsonlGz(key, episodes);
  }
  const w = config.warmup;
  const optimizer = new AdamW({ betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0 });
  try {
    const { finalLoss } = await sftTrain({
      model,
      optimizer,
      trajectories: episodes,
      steps: w.train_steps,
      batchSize: w.batch_size,
      microBatchSize: config.actor_train.training_args.per_device_train_batch_size,
      gradientCheckpointing: gradientCheckpointing(config.actor_train),
      lr: warmupSchedule(w),
      maxGradNorm: config.max_grad_norm,
      seed: config.seed,
      padId: tokenizer.padId,
      afterStep: (step, loss) => heartbeat({ warmupStep: step, warmupSteps: w.train_steps, loss }),
    });
    return {
      'warmup/final_loss': finalLoss,
      'warmup/seconds': (performance.now() - started) / 1000,
      'warmup/episodes': episodes.length,
      'warmup/episode_success': episodes.filter((t) => t.success).length / episodes.length,
    };
  } finally {
    optimizer.dispose();
  }
}

/**
 * The stored warm-up checkpoint when its manifest exists and every object verifies, else null: a
 * damaged warm-up is made again (deterministic: the same bytes) instead of failing every run using it.
 */
async function verifiedWarmup(
  rt: ActivityRuntime,
  manifestKey: string,
): Promise<{ ref: ObjectRef; metrics: Record<string, number> } | null> {
  try {
    const ref = await rt.existing(manifestKey);
    if (!ref) return null;
    return { ref, metrics: trainerStateOf((await readCheckpoint(rt.store, ref, verifyOnlySafetensors)).files).metrics };
  } catch (err) {
    if (!isUnusable(err)) throw err;
    log.warn(`the stored warm-up is not usable: ${err.message}; making it again`);
    return null;
  }
}

/**
 * Runs `fn` on the folder of `pretrain: DIR`; a missing or invalid folder on this worker's host is a
 * ConfigError (not retried), naming the file.
 */
function fromFolder<T>(dir: string, fn: (dir: string) => T): T {
  try {
    return fn(dir);
  } catch (err) {
    if (err instanceof PretrainedFolderError) throw new ConfigError('pretrain', [`${err.message} (on the update worker's host)`]);
    throw err;
  }
}

/** The step-0 policy before the warm-up: the tiny preset's seeded random init, or the HF folder's model. */
function initialPolicy(config: RunConfig): { model: Qwen2; tokenizer: ChatTokenizer } {
  if (config.pretrain !== TINY_PRESET) return fromFolder(config.pretrain, modelFromFolder);
  const tokenizer = charTokenizer();
  return { model: Qwen2.random(tinyPreset(tokenizer.vocabSize, config.config_overrides), deriveSeed(config.seed, 'init')), tokenizer };
}

/**
 * Stores run.json, unless the run id already has one with another config: every run's objects live under
 * runs/<run id>/ and workers cache run.json by run id, so a second run under the same id (a workflow started
 * past `starpo train`'s check, or with the id of one whose history is gone) would take over the first one's
 * folder. A retried prepareRun finds its own run.json and goes on.
 * @throws ConfigError (non-retryable) naming the run id when run.json holds another run
 */
async function storeRunSpec(rt: ActivityRuntime, spec: RunSpec): Promise<void> {
  const key = runKey(spec.runId);
  if (await rt.store.exists(key)) {
    const stored = await rt.store.getJson<RunSpec>(key);
    if (isDeepStrictEqual(stored, spec)) return;
    throw new ConfigError(key, [
      `run id ${JSON.stringify(spec.runId)} is taken: ${key} holds a run of another config (${stored.configName}); a run id names one run, pick another (starpo resume continues the existing one)`,
    ]);
  }
  await rt.store.putJson(key, spec);
}

/**
 * A LoRA run's step-0 policy: the warm start `base` with the run's initial adapters (the adapter_name_or_path
 * folder's, else PEFT's initialisation of lora_target's, seeded by the run's seed), stored as the run's step-0
 * adapter checkpoint. Without LoRA the warm start itself.
 */
async function withInitialAdapters(
  rt: ActivityRuntime,
  spec: RunSpec,
  base: ObjectRef,
  metrics: Record<string, number>,
): Promise<ObjectRef> {
  const { config, runId } = spec;
  const settings = loraSettings(config.actor_train.model_args);
  const dir = config.actor_train.model_args?.adapter_name_or_path ?? null; // absent in runs stored before model_args
  if (!settings && !dir) return base;
  const c = await loadCheckpoint(rt.store, base);
  try {
    const weights = c.model.toNamedTensors();
    c.model.setAdapters(
      dir
        ? adapterFolder(c.model, dir)
        : LoraAdapters.init(
            c.model.config,
            settings as LoraSettings,
            deriveSeed(config.seed, 'lora-init'),
            (name) => weights.get(name) as tf.Tensor,
          ),
    );
    const state = { step: 0, betas: [0.9, 0.999] as [number, number], weightDecay: 0, metrics, base };
    return await saveCheckpoint(rt.store, checkpointPrefix(runId, 0), { ...c, state });
  } finally {
    disposeCheckpoint(c);
  }
}

/** The adapters of a PEFT folder for `model`; a folder that does not fit is a ConfigError (not retried) naming it. */
function adapterFolder(model: Qwen2, dir: string): LoraAdapters {
  try {
    return adaptersFromFolder(model.config, dir);
  } catch (err) {
    throw new ConfigError('actor_train.model_args.adapter_name_or_path', [`${(err as Error).message} (on the update worker's host)`]);
  }
}

/** Points the run's initial.json and latest.json at its step-0 checkpoint. */
async function pointAt(rt: ActivityRuntime, runId: string, ref: ObjectRef): Promise<void> {
  await writeInitial(rt.store, runId, ref);
  await writeLatest(rt.store, runId, ref, 0);
}

/**
 * Builds the prepareRun activity over a runtime. A random-init model never answers in the
 * <answer>...</answer> format, so the run starts, as ROLL does from an instruct model, from a supervised
 * warm-up: SFT on demonstration episodes (`format`: uniformly random valid actions; `solver`: the env
 * solver's shortest plans for warmup.solver_fraction of them), from the `pretrain` policy (the tiny
 * preset's seeded random init, or an HF folder's weights read on this worker's host; with `warmup: {type:
 * none}` the step-0 policy is that folder's weights exactly). The warm-up episodes and checkpoint live
 * under warmup/<sha256 of everything they depend on>/ and are reused, after verifying them, by every later
 * run with the same settings. The metrics name the warm start (warmup/type_<type> = 1); the run's
 * initial.json and latest.json point at the step-0 checkpoint.
 */
export function prepareRunActivity(rt: ActivityRuntime) {
  return async function prepareRun(input: RunSpec): Promise<PrepareRunOutput> {
    const { runId, configName, config } = input;
    // The worker's previous activity set its own run's limit; the warm-up computes under this run's.
    setWatchdogLimit(config.watchdog_seconds);
    await storeRunSpec(rt, { runId, configName, config });
    const pretrain = config.pretrain === TINY_PRESET ? TINY_PRESET : fromFolder(config.pretrain, pretrainedIdentity);
    const hash = createHash('sha256')
      .update(JSON.stringify(warmupIdentity(config, pretrain)))
      .digest('hex')
      .slice(0, 16);
    const prefix = warmupPrefix(hash);
    const typeMetric = { [`warmup/type_${config.warmup.type}`]: 1 };
    const existing = await verifiedWarmup(rt, `${prefix}manifest.json`);
    // A reused warm-up reports what it cost the run that trained it (warmup/seconds, final_loss), so runs
    // that share it compare alike by wall minutes; warmup/reused = 1 says this run did not spend that time.
    if (existing) {
      const checkpoint = await withInitialAdapters(rt, input, existing.ref, existing.metrics);
      await pointAt(rt, runId, checkpoint);
      return { checkpoint, metrics: { ...existing.metrics, 'warmup/reused': 1 } };
    }
    const { model, tokenizer } = initialPolicy(config);
    try {
      const metrics =
        config.warmup.type === 'none' ? typeMetric : { ...typeMetric, ...(await sftWarmup(rt, config, prefix, model, tokenizer)) };
      const ref = await saveCheckpoint(rt.store, prefix, {
        model,
        tokenizer,
        optimizer: null,
        state: { step: 0, betas: [0.9, 0.999], weightDecay: 0, metrics },
      });
      const checkpoint = await withInitialAdapters(rt, input, ref, metrics);
      await pointAt(rt, runId, checkpoint);
      return { checkpoint, metrics: { ...metrics, 'warmup/reused': 0 } };
    } finally {
      model.dispose();
    }
  };
}

/** Builds the loadRun activity over a runtime. @throws ConfigError (non-retryable) when run.json is missing */
export function loadRunActivity(rt: ActivityRuntime) {
  return async function loadRun(runId: string): Promise<RunSpec> {
    if (!(await rt.store.exists(runKey(runId))))
      throw new ConfigError(runKey(runId), ['missing: the run was never prepared or its folder was deleted']);
    return rt.run(runId);
  };
}

/** Builds the writeMetrics activity over a runtime. */
export function writeMetricsActivity(rt: ActivityRuntime) {
  return async function writeMetrics(input: WriteMetricsInput): Promise<void> {
    const record: StepMetrics = { step: input.step, metrics: input.metrics, ...(input.compute ? { compute: input.compute } : {}) };
    await rt.store.putJson(metricsKey(input.runId, input.step), record);
  };
}
