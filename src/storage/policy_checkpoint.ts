/**
 * A policy checkpoint: the HF-named weights, config and tokenizer, trainer_state.json and the optimizer state,
 * saved and loaded through checkpoint.ts; and what of older steps the store keeps (save_steps,
 * max_ckpt_to_keep, async_generation_ratio). docs/durability.md tells the story.
 */
import * as tf from '@tensorflow/tfjs';
import { AdamW } from '../algo/adamw';
import type { ObjectRef, RunConfig, StreamedObject, TrainerState } from '../contract';
import type { Qwen2Config } from '../model/config';
import { adapterFiles } from '../model/hf/peft';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS, fromPeftTensorName, loraSettingsOfAdapterConfig } from '../model/hf/peft_config';
import { SafetensorsDecoder } from '../model/hf/safetensors';
import { tokenizerFromFiles } from '../model/hf/tokenizer';
import { type BackendSafetensors, configFromJSONBytes, configToJSONBytes, modelSafetensors, tensorOnBackend } from '../model/hf/weights';
import { LoraAdapters } from '../model/lora';
import { Qwen2 } from '../model/qwen2';
import type { ChatTokenizer } from '../model/tokenizer';
import { ValueModel } from '../model/value_model';
import { assertFitsBackend } from '../model/wasm_memory';
import {
  OPTIMIZER_FILES,
  OPTIMIZER_MANIFEST_NAME,
  readCheckpoint,
  readCheckpointFile,
  readOptimizerFiles,
  type SinkFor,
  stepsListing,
  WEIGHT_FILES,
  writeCheckpoint,
} from './checkpoint';
import { checkpointPrefix, checkpointsPrefix } from './keys';
import type { ObjectStore } from './object_store';

/** A loaded checkpoint. The caller owns (and disposes) the model and optimizer. */
export interface PolicyCheckpoint {
  model: Qwen2;
  tokenizer: ChatTokenizer;
  /** null when not loaded, or when the checkpoint has none (the step-0 warm-up): start a fresh AdamW then. */
  optimizer: AdamW | null;
  /** The gae critic and its optimizer; null before the first gae update (the critic starts from the policy). */
  critic: ValueModel | null;
  criticOptimizer: AdamW | null;
  state: TrainerState;
}

/** Frees every model and optimizer of a loaded checkpoint. */
export function disposeCheckpoint(c: PolicyCheckpoint): void {
  c.model.dispose();
  c.optimizer?.dispose();
  c.critic?.dispose();
  c.criticOptimizer?.dispose();
}

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value, null, 1));

/** The trainer_state.json of a checkpoint's files (as read by readCheckpoint). */
export function trainerStateOf(files: Record<string, Uint8Array>): TrainerState {
  return JSON.parse(new TextDecoder().decode(files['trainer_state.json'])) as TrainerState;
}

/**
 * Writes a checkpoint under `prefix` and returns its manifest ref: the optimizer state first (with its own
 * manifest, when the checkpoint carries one), then the weights, config, tokenizer (with an HF folder's chat
 * files), trainer_state.json and `extraFiles` (e.g. trajectory_scores.json), manifest.json last. Weights and
 * optimizer state stream to the store (multipart, sha256 on the stream): neither file is ever one buffer. A model
 * with LoRA adapters is saved as its adapters only (PEFT's two files), its trainer state naming the `base`
 * checkpoint whose weights they apply to.
 * @throws Error when a model with adapters has no base in its trainer state
 * @throws Error from the object store (retried by Temporal)
 */
export async function saveCheckpoint(
  store: ObjectStore,
  prefix: string,
  c: Pick<PolicyCheckpoint, 'model' | 'tokenizer' | 'optimizer' | 'state'> & Partial<Pick<PolicyCheckpoint, 'critic' | 'criticOptimizer'>>,
  extraFiles: Record<string, Uint8Array> = {},
): Promise<ObjectRef> {
  const meta = { step: c.state.step };
  const optimizer: Record<string, StreamedObject> = {};
  if (c.optimizer) optimizer['optimizer.safetensors'] = c.optimizer.safetensors();
  if (c.criticOptimizer) optimizer['critic_optimizer.safetensors'] = c.criticOptimizer.safetensors();
  if (Object.keys(optimizer).length > 0) await writeCheckpoint(store, prefix, optimizer, meta, OPTIMIZER_MANIFEST_NAME);
  const adapters = c.model.adapters();
  if (adapters && !c.state.base)
    throw new Error(`checkpoint ${prefix}: a model with LoRA adapters needs the base checkpoint in its trainer state`);
  const files: Record<string, Uint8Array | StreamedObject> = {
    ...extraFiles,
    ...c.tokenizer.chatFiles,
    ...(adapters && c.state.base
      ? adapterFiles(c.model.config, adapters, c.state.base.key)
      : { 'model.safetensors': modelSafetensors(c.model) }),
    'config.json': configToJSONBytes(c.model.config),
    'tokenizer.json': json(c.tokenizer.toJSON()),
    'trainer_state.json': json(c.state),
  };
  if (c.critic) files['critic.safetensors'] = c.critic.safetensors();
  return writeCheckpoint(store, prefix, files, meta);
}

/**
 * Puts every safetensors file of a checkpoint on the backend as it streams in: each tensor is uploaded once its
 * bytes are in and its host array dropped, so a load never holds the checkpoint twice (host and backend). Pass
 * `sinkFor` to readCheckpoint, then `take` each file once the read (and its sha256 check) succeeded; `dispose`
 * frees whatever was not taken.
 */
class SafetensorsFiles {
  private readonly files = new Map<string, { decoder: SafetensorsDecoder; tensors: Map<string, tf.Tensor> }>();

  readonly sinkFor: SinkFor = (name, bytes) => {
    if (!name.endsWith('.safetensors')) return undefined;
    this.drop(name); // a retried read starts afresh
    const tensors = new Map<string, tf.Tensor>();
    const decoder = new SafetensorsDecoder(bytes, (tensorName, t) => {
      // starpo writes its checkpoints' weights and moments as F32
      if (t.dtype !== 'F32') throw new Error(`${name}: tensor ${tensorName} is ${t.dtype}; allowed: F32`);
      tensors.set(tensorName, tensorOnBackend(t));
    });
    this.files.set(name, { decoder, tensors });
    return decoder;
  };

  /**
   * The file's tensors, now the caller's, or undefined when the checkpoint has none.
   * @throws Error naming the object when it is malformed
   */
  take(name: string, key: (name: string) => string): BackendSafetensors | undefined {
    const file = this.files.get(name);
    if (!file) return undefined;
    let metadata: Record<string, string>;
    try {
      metadata = file.decoder.finish().metadata;
    } catch (err) {
      throw new Error(`${key(name)}: ${(err as Error).message}`);
    }
    this.files.delete(name);
    return { tensors: file.tensors, metadata };
  }

  /** Whether the checkpoint read has this file (and it was not taken yet). */
  has(name: string): boolean {
    return this.files.has(name);
  }

  /** Frees the tensors of every file not taken. */
  dispose(): void {
    for (const name of [...this.files.keys()]) this.drop(name);
  }

  private drop(name: string): void {
    const file = this.files.get(name);
    if (file) tf.dispose([...file.tensors.values()]);
    this.files.delete(name);
  }
}

const disposeAll = (file: BackendSafetensors | undefined) => tf.dispose([...(file?.tensors.values() ?? [])]);

/** The model of a checkpoint of full weights. The variables share the uploaded tensors' data: the map's own references go either way. */
function fullModel(config: Qwen2Config, weights: BackendSafetensors | undefined, key: (name: string) => string): Qwen2 {
  if (!weights) throw new Error(`${key('model.safetensors')}: the checkpoint lists no model.safetensors (nor adapters)`);
  try {
    return Qwen2.fromNamedTensors(config, weights.tensors);
  } finally {
    disposeAll(weights);
  }
}

/**
 * The base model of an adapter checkpoint (`base`, or read from the store) with the checkpoint's adapters on top.
 * When this fails, the model it was building is freed, `base` included.
 */
async function withAdapters(
  store: ObjectStore,
  files: Record<string, Uint8Array>,
  state: TrainerState,
  adapters: BackendSafetensors,
  key: (name: string) => string,
  base?: Qwen2,
): Promise<Qwen2> {
  let model = base ?? null;
  try {
    if (!state.base) throw new Error(`${key('trainer_state.json')}: an adapter checkpoint's trainer state names no base checkpoint`);
    const json = files[ADAPTER_CONFIG];
    if (!json) throw new Error(`${key(ADAPTER_CONFIG)}: the checkpoint has adapters but no ${ADAPTER_CONFIG}`);
    const settings = loraSettingsOfAdapterConfig(JSON.parse(new TextDecoder().decode(json)), key(ADAPTER_CONFIG));
    if (!model) {
      const loaded = await loadCheckpoint(store, state.base);
      loaded.critic?.dispose();
      model = loaded.model;
    }
    const named = new Map([...adapters.tensors].map(([name, t]) => [fromPeftTensorName(name), t]));
    model.setAdapters(LoraAdapters.fromNamedTensors(model.config, settings, named));
    return model;
  } catch (err) {
    model?.dispose();
    throw err;
  } finally {
    disposeAll(adapters);
  }
}

/**
 * Adds the optimizer state to a checkpoint loaded without it (a no-op when it has one, or for the step-0
 * warm-up, which has none).
 * @throws ObjectNotFoundError when the store no longer keeps it, CorruptObjectError when it is damaged
 */
export async function attachOptimizer(store: ObjectStore, manifest: ObjectRef, c: PolicyCheckpoint): Promise<void> {
  if (c.optimizer || c.state.step === 0) return;
  const decoded = new SafetensorsFiles();
  try {
    await readOptimizerFiles(store, manifest.key, decoded.sinkFor);
    setOptimizers(c, decoded, (name) => `${manifest.key}: ${name}`);
  } finally {
    decoded.dispose();
  }
}

/** Builds the checkpoint's optimizers from decoded optimizer files (AdamW settings from its trainer state). */
function setOptimizers(c: PolicyCheckpoint, decoded: SafetensorsFiles, key: (name: string) => string): void {
  const s = c.state;
  const actor = decoded.take('optimizer.safetensors', key);
  if (!actor) throw new Error(`${key('optimizer.safetensors')}: the optimizer state lists no optimizer.safetensors`);
  c.optimizer = adopt(actor, (f) => AdamW.fromTensors(f, { betas: s.betas, weightDecay: s.weightDecay }));
  const critic = decoded.take('critic_optimizer.safetensors', key);
  if (critic && s.criticOptimizer) {
    const settings = s.criticOptimizer;
    c.criticOptimizer = adopt(critic, (f) => AdamW.fromTensors(f, settings));
  } else disposeAll(critic);
}

/** An optimizer built from a file's tensors, which it owns from then on (freed here when building it failed). */
function adopt(file: BackendSafetensors, build: (file: BackendSafetensors) => AdamW): AdamW {
  try {
    return build(file);
  } catch (err) {
    disposeAll(file);
    throw err;
  }
}

/**
 * Reads and verifies (sha256, on the stream) a checkpoint and builds the model, tokenizer and critic; with
 * `withOptimizer` also its optimizer state (what an update continues from). An adapter checkpoint's model is its
 * base checkpoint's (read from the store, or `base` when the caller holds that model, which it hands over: it is
 * freed if the load fails) with the adapters on top.
 * @throws CorruptObjectError when an object does not match its manifest, ObjectNotFoundError when one is missing,
 *   ConfigError when the backend cannot hold the model (wasm_memory.ts)
 */
export async function loadCheckpoint(
  store: ObjectStore,
  manifest: ObjectRef,
  withOptimizer = false,
  base?: Qwen2,
): Promise<PolicyCheckpoint> {
  const decoded = new SafetensorsFiles();
  let c: PolicyCheckpoint | null = null;
  try {
    // The raw config is checked before the weights stream in: a model the backend cannot hold fails first.
    const config = configFromJSONBytes((await readCheckpointFile(store, manifest.key, 'config.json')) ?? new Uint8Array());
    assertFitsBackend(config, withOptimizer ? 'update' : 'rollout', manifest.key);
    const { files } = await readCheckpoint(store, manifest, decoded.sinkFor);
    const key = (name: string) => `${manifest.key}: ${name}`;
    const state = trainerStateOf(files);
    const tokenizer = tokenizerFromFiles(files, key);
    const adapters = decoded.take(ADAPTER_WEIGHTS, key);
    let model: Qwen2;
    if (adapters) model = await withAdapters(store, files, state, adapters, key, base);
    else {
      base?.dispose(); // handed over for nothing: a checkpoint of full weights has its own
      model = fullModel(config, decoded.take('model.safetensors', key), key);
    }
    const criticWeights = decoded.take('critic.safetensors', key);
    let critic: ValueModel | null = null;
    try {
      if (criticWeights) critic = ValueModel.fromTensors(config, criticWeights.tensors);
    } catch (err) {
      model.dispose();
      throw err;
    } finally {
      disposeAll(criticWeights);
    }
    c = { model, tokenizer, optimizer: null, critic, criticOptimizer: null, state };
    // Checkpoints written before the optimizer state had a manifest of its own list it in manifest.json.
    if (withOptimizer && decoded.has('optimizer.safetensors')) setOptimizers(c, decoded, key);
    else if (withOptimizer) await attachOptimizer(store, manifest, c);
    return c;
  } catch (err) {
    if (c) disposeCheckpoint(c);
    throw err;
  } finally {
    decoded.dispose();
  }
}

/**
 * Whether checkpoint step `step` is a full checkpoint the store keeps (save_steps, as ROLL's do_checkpoint:
 * after the update of pipeline step g = step - 1 when g > 0 and g % save_steps == 0, and after the last step).
 */
export function isFullCheckpoint(step: number, config: Pick<RunConfig, 'save_steps' | 'max_steps'>): boolean {
  const g = step - 1;
  return (g > 0 && g % config.save_steps === 0) || step === config.max_steps;
}

type RetentionConfig = Pick<RunConfig, 'save_steps' | 'max_steps' | 'max_ckpt_to_keep' | 'async_generation_ratio'>;

/**
 * The steps in `present` whose data may go once checkpoint step `newest` is written: every step before it
 * except the 1 + async_generation_ratio steps before it (a damaged newest replays from the step before; rollouts
 * running ahead still read older policies) and the newest max_ckpt_to_keep full checkpoints (all of them when 0,
 * as ROLL). Step 0 (the reference policy) and steps after `newest` (left by a replayed stretch) are not touched.
 */
export function stepsToDrop(present: readonly number[], newest: number, config: RetentionConfig): number[] {
  const older = present.filter((s) => s > 0 && s < newest - 1 - config.async_generation_ratio).sort((a, b) => b - a);
  const full = older.filter((s) => isFullCheckpoint(s, config));
  const keptFull = new Set(
    config.max_ckpt_to_keep > 0 ? full.slice(0, Math.max(0, config.max_ckpt_to_keep - (isFullCheckpoint(newest, config) ? 1 : 0))) : full,
  );
  return older.filter((s) => !keptFull.has(s)).sort((a, b) => a - b);
}

/**
 * Deletes what retention lets go once checkpoint step `newest` and latest.json are written: the optimizer
 * state of the steps stepsToDrop names (its manifest first, so a half-deleted state reads as absent, never as
 * damaged), and, when max_ckpt_to_keep > 0, their weights too (model.safetensors first, which is what marks a
 * step's weights as dropped; manifest.json, trainer_state.json and trajectory_scores.json stay for `report`).
 * With max_ckpt_to_keep 0 the weights of every step stay, so `eval` and `export` reach any step. Logs each step.
 * Called by the update; idempotent.
 */
export async function dropOldCheckpointData(
  store: ObjectStore,
  runId: string,
  newest: number,
  config: RetentionConfig,
  log: (line: string) => void = () => undefined,
): Promise<void> {
  const keys = (await store.list(checkpointsPrefix(runId))).map((o) => o.key);
  const why = `not a full checkpoint kept by save_steps ${config.save_steps}, max_ckpt_to_keep ${config.max_ckpt_to_keep}`;
  const prefix = (step: number) => checkpointPrefix(runId, step);
  for (const step of stepsToDrop(stepsListing(keys, OPTIMIZER_MANIFEST_NAME), newest, config)) {
    for (const name of [OPTIMIZER_MANIFEST_NAME, ...OPTIMIZER_FILES]) await store.remove(`${prefix(step)}${name}`);
    log(`run ${runId}: dropped the optimizer state of checkpoint step ${step} (${why})`);
  }
  if (config.max_ckpt_to_keep === 0) return;
  const weights = [...new Set(WEIGHT_FILES.flatMap((name) => stepsListing(keys, name)))];
  for (const step of stepsToDrop(weights, newest, config)) {
    for (const name of WEIGHT_FILES) await store.remove(`${prefix(step)}${name}`);
    log(`run ${runId}: dropped the weights of checkpoint step ${step} (${why})`);
  }
}
