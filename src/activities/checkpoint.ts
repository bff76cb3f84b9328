/**
 * Checkpoint files of a policy (DESIGN.md, Object store layout): model.safetensors (HF tensor
 * names), config.json (HF-style), tokenizer.json and, for an HF folder's tokenizer, the folder's chat files
 * (tokenizer_config.json, chat_template.jinja, generation_config.json as read, so every worker renders
 * the model's own prompts and stops at its stop tokens), optional optimizer.safetensors, for gae runs
 * critic.safetensors and critic_optimizer.safetensors (ROLL's critic role), trainer_state.json;
 * manifest.json is written last by src/storage/manifest.ts and commits the checkpoint.
 */
import type { ObjectStore } from '../storage/object_store';
import { readCheckpoint, writeCheckpoint } from '../storage/manifest';
import type { ComputeInfo, ObjectRef } from '../contract';
import { Qwen2 } from '../model/qwen2';
import { tokenizerFromFiles, type ChatTokenizer } from '../model/tokenizer';
import { configFromJSONBytes, configToJSONBytes, modelFromSafetensors, modelToSafetensors } from '../model/weights_io';
import { AdamW } from '../algo/adamw';
import { ValueModel } from '../model/value_model';

/** What trainer_state.json holds. */
export interface TrainerState {
  /** Pipeline steps (updates) completed when this checkpoint was written. */
  step: number;
  /** AdamW settings the optimizer state belongs to. */
  betas: [number, number];
  weightDecay: number;
  /** AdamW settings of the critic's optimizer (gae runs). */
  criticOptimizer?: { betas: [number, number]; weightDecay: number };
  /** Scalar facts about how the checkpoint was made (metrics of its update or warm-up). */
  metrics: Record<string, number>;
  /** Beta of the token-level KL after this step (adaptive controller state; SPEC.md §2 target_kl). */
  klCoef?: number;
  /** Manifest of the run's step-0 policy: the frozen reference of the KL terms. Absent in the step-0 checkpoint itself. */
  reference?: ObjectRef;
  /** Why this step's update made no optimizer step (StarPO-S filter kept nothing), when it did not. */
  skipReason?: string;
  /** Where the update that wrote this checkpoint computed. */
  compute?: ComputeInfo;
}

/** A loaded checkpoint. The caller owns (and disposes) the model and optimizer. */
export interface PolicyCheckpoint {
  model: Qwen2;
  tokenizer: ChatTokenizer;
  /** null when the checkpoint has no optimizer state (e.g. the warm-up): start a fresh AdamW. */
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
const parse = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes)) as unknown;

/** The trainer_state.json of a checkpoint's files (as read by storage/manifest readCheckpoint). */
export function trainerStateOf(files: Record<string, Uint8Array>): TrainerState {
  return parse(files['trainer_state.json']) as TrainerState;
}

/**
 * Writes a checkpoint under `prefix` and returns its manifest ref.
 * @param extraFiles more files of the checkpoint by name (e.g. the update's trajectory_scores.json), listed in the manifest
 * @throws Error from the object store (retried by Temporal)
 */
export async function saveCheckpoint(
  store: ObjectStore, prefix: string,
  c: Pick<PolicyCheckpoint, 'model' | 'tokenizer' | 'optimizer' | 'state'> & Partial<Pick<PolicyCheckpoint, 'critic' | 'criticOptimizer'>>,
  extraFiles: Record<string, Uint8Array> = {},
): Promise<ObjectRef> {
  const files: Record<string, Uint8Array> = {
    ...extraFiles,
    ...c.tokenizer.chatFiles,
    'model.safetensors': await modelToSafetensors(c.model),
    'config.json': configToJSONBytes(c.model.config),
    'tokenizer.json': json(c.tokenizer.toJSON()),
    'trainer_state.json': json(c.state),
  };
  if (c.optimizer) files['optimizer.safetensors'] = await c.optimizer.toSafetensors();
  if (c.critic) files['critic.safetensors'] = await c.critic.toSafetensors();
  if (c.criticOptimizer) files['critic_optimizer.safetensors'] = await c.criticOptimizer.toSafetensors();
  return writeCheckpoint(store, prefix, files, { step: c.state.step });
}

/**
 * Reads and verifies (sha256) a checkpoint and builds the model, tokenizer and optimizer.
 * @throws CorruptObjectError when an object does not match its manifest
 */
export async function loadCheckpoint(store: ObjectStore, manifest: ObjectRef): Promise<PolicyCheckpoint> {
  const { files } = await readCheckpoint(store, manifest);
  const config = configFromJSONBytes(files['config.json']);
  const state = trainerStateOf(files);
  const model = modelFromSafetensors(config, files['model.safetensors']);
  const tokenizer = tokenizerFromFiles(files, (name) => `${manifest.key}: ${name}`);
  const optimizer = files['optimizer.safetensors']
    ? AdamW.fromSafetensors(files['optimizer.safetensors'], { betas: state.betas, weightDecay: state.weightDecay })
    : null;
  const critic = files['critic.safetensors'] ? ValueModel.fromSafetensors(config, files['critic.safetensors']) : null;
  const c = state.criticOptimizer;
  const criticOptimizer = files['critic_optimizer.safetensors'] && c
    ? AdamW.fromSafetensors(files['critic_optimizer.safetensors'], { betas: c.betas, weightDecay: c.weightDecay })
    : null;
  return { model, tokenizer, optimizer, critic, criticOptimizer, state };
}
