/**
 * A policy checkpoint: the HF-named weights, config and tokenizer, trainer_state.json and the optimizer state,
 * saved and loaded through checkpoint.ts; and which optimizer states the store keeps (save_steps,
 * max_ckpt_to_keep). docs/durability.md tells the story.
 */
import { AdamW } from '../algo/adamw';
import type { ObjectRef, RunConfig, TrainerState } from '../contract';
import { tokenizerFromFiles } from '../model/hf/tokenizer';
import { configFromJSONBytes, configToJSONBytes, modelFromSafetensors, modelToSafetensors } from '../model/hf/weights';
import type { Qwen2 } from '../model/qwen2';
import type { ChatTokenizer } from '../model/tokenizer';
import { ValueModel } from '../model/value_model';
import { assertFitsBackend } from '../model/wasm_memory';
import { OPTIMIZER_FILES, OPTIMIZER_MANIFEST_NAME, readCheckpoint, readOptimizerFiles, writeCheckpoint } from './checkpoint';
import { checkpointsPrefix, parseStep } from './keys';
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
 * files), trainer_state.json and `extraFiles` (e.g. trajectory_scores.json), manifest.json last.
 * @throws Error from the object store (retried by Temporal)
 */
export async function saveCheckpoint(
  store: ObjectStore,
  prefix: string,
  c: Pick<PolicyCheckpoint, 'model' | 'tokenizer' | 'optimizer' | 'state'> & Partial<Pick<PolicyCheckpoint, 'critic' | 'criticOptimizer'>>,
  extraFiles: Record<string, Uint8Array> = {},
): Promise<ObjectRef> {
  const meta = { step: c.state.step };
  const optimizer: Record<string, Uint8Array> = {};
  if (c.optimizer) optimizer['optimizer.safetensors'] = await c.optimizer.toSafetensors();
  if (c.criticOptimizer) optimizer['critic_optimizer.safetensors'] = await c.criticOptimizer.toSafetensors();
  if (Object.keys(optimizer).length > 0) await writeCheckpoint(store, prefix, optimizer, meta, OPTIMIZER_MANIFEST_NAME);
  const files: Record<string, Uint8Array> = {
    ...extraFiles,
    ...c.tokenizer.chatFiles,
    'model.safetensors': await modelToSafetensors(c.model),
    'config.json': configToJSONBytes(c.model.config),
    'tokenizer.json': json(c.tokenizer.toJSON()),
    'trainer_state.json': json(c.state),
  };
  if (c.critic) files['critic.safetensors'] = await c.critic.toSafetensors();
  return writeCheckpoint(store, prefix, files, meta);
}

/**
 * Adds the optimizer state to a checkpoint loaded without it (a no-op when it has one, or for the step-0
 * warm-up, which has none).
 * @throws ObjectNotFoundError when the store no longer keeps it, CorruptObjectError when it is damaged
 */
export async function attachOptimizer(store: ObjectStore, manifest: ObjectRef, c: PolicyCheckpoint): Promise<void> {
  if (c.optimizer || c.state.step === 0) return;
  setOptimizers(c, await readOptimizerFiles(store, manifest.key));
}

/** Builds the checkpoint's optimizers from optimizer files (AdamW settings from its trainer state). */
function setOptimizers(c: PolicyCheckpoint, files: Record<string, Uint8Array>): void {
  const s = c.state;
  c.optimizer = AdamW.fromSafetensors(files['optimizer.safetensors'], { betas: s.betas, weightDecay: s.weightDecay });
  const critic = files['critic_optimizer.safetensors'];
  if (critic && s.criticOptimizer) c.criticOptimizer = AdamW.fromSafetensors(critic, s.criticOptimizer);
}

/**
 * Reads and verifies (sha256) a checkpoint and builds the model, tokenizer and critic; with `withOptimizer`
 * also its optimizer state (what an update continues from).
 * @throws CorruptObjectError when an object does not match its manifest, ObjectNotFoundError when one is missing,
 *   ConfigError when the backend cannot hold the model (wasm_memory.ts)
 */
export async function loadCheckpoint(store: ObjectStore, manifest: ObjectRef, withOptimizer = false): Promise<PolicyCheckpoint> {
  const { files } = await readCheckpoint(store, manifest);
  const config = configFromJSONBytes(files['config.json']);
  assertFitsBackend(config, withOptimizer ? 'update' : 'rollout', manifest.key);
  const state = trainerStateOf(files);
  const model = modelFromSafetensors(config, files['model.safetensors']);
  const tokenizer = tokenizerFromFiles(files, (name) => `${manifest.key}: ${name}`);
  const critic = files['critic.safetensors'] ? ValueModel.fromSafetensors(config, files['critic.safetensors']) : null;
  const c: PolicyCheckpoint = { model, tokenizer, optimizer: null, critic, criticOptimizer: null, state };
  // Checkpoints written before the optimizer state had a manifest of its own list it in manifest.json.
  if (withOptimizer && files['optimizer.safetensors']) setOptimizers(c, files);
  else if (withOptimizer) {
    try {
      await attachOptimizer(store, manifest, c);
    } catch (err) {
      disposeCheckpoint(c);
      throw err;
    }
  }
  return c;
}

/**
 * Whether checkpoint step `step` is a full checkpoint the store keeps (save_steps, as ROLL's do_checkpoint:
 * after the update of pipeline step g = step - 1 when g > 0 and g % save_steps == 0, and after the last step).
 */
export function isFullCheckpoint(step: number, config: Pick<RunConfig, 'save_steps' | 'max_steps'>): boolean {
  const g = step - 1;
  return (g > 0 && g % config.save_steps === 0) || step === config.max_steps;
}

/**
 * The steps whose optimizer state may go once checkpoint step `newest` is written: every step in `present`
 * before it except the step before it (`newest` is what the next update, a retry or a resume continues
 * from; the step before is where a run whose newest checkpoint is damaged replays from) and the newest
 * max_ckpt_to_keep full checkpoints (all of them when 0, as ROLL). Steps after `newest` (left by a replayed
 * stretch) are not touched. The weights of every step stay.
 */
export function optimizerStepsToDrop(
  present: readonly number[],
  newest: number,
  config: Pick<RunConfig, 'save_steps' | 'max_steps' | 'max_ckpt_to_keep'>,
): number[] {
  const older = present.filter((s) => s < newest - 1).sort((a, b) => b - a);
  const full = older.filter((s) => isFullCheckpoint(s, config));
  const keptFull = new Set(
    config.max_ckpt_to_keep > 0 ? full.slice(0, Math.max(0, config.max_ckpt_to_keep - (isFullCheckpoint(newest, config) ? 1 : 0))) : full,
  );
  return older.filter((s) => !keptFull.has(s)).sort((a, b) => a - b);
}

/**
 * Deletes the optimizer states optimizerStepsToDrop names (its manifest first, so a half-deleted state reads as
 * absent, never as damaged) and logs each. Called by the update once checkpoint step `newest` and latest.json are written.
 */
export async function dropOldOptimizerStates(
  store: ObjectStore,
  runId: string,
  newest: number,
  config: Pick<RunConfig, 'save_steps' | 'max_steps' | 'max_ckpt_to_keep'>,
  log: (line: string) => void = () => undefined,
): Promise<number[]> {
  const manifests = (await store.list(checkpointsPrefix(runId))).map((o) => o.key).filter((k) => k.endsWith(`/${OPTIMIZER_MANIFEST_NAME}`));
  const byStep = new Map(manifests.map((k) => [parseStep(k), k] as const).filter((e): e is [number, string] => e[0] !== null));
  const drop = optimizerStepsToDrop([...byStep.keys()], newest, config);
  for (const step of drop) {
    const key = byStep.get(step)!;
    const prefix = key.slice(0, key.length - OPTIMIZER_MANIFEST_NAME.length);
    await store.remove(key);
    for (const name of OPTIMIZER_FILES) await store.remove(`${prefix}${name}`);
    log(
      `run ${runId}: dropped the optimizer state of checkpoint step ${step} (not a full checkpoint kept by save_steps ${config.save_steps}, max_ckpt_to_keep ${config.max_ckpt_to_keep}); its weights stay`,
    );
  }
  return drop;
}
