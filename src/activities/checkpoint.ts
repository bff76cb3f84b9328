/**
 * Checkpoint files of a policy (DESIGN.md, Object store layout): model.safetensors (HF tensor
 * names), config.json (HF-style), tokenizer.json, optional optimizer.safetensors, trainer_state.json;
 * manifest.json is written last by src/storage/manifest.ts and commits the checkpoint.
 */
import type { ObjectStore } from '../storage/object_store';
import { readCheckpoint, writeCheckpoint } from '../storage/manifest';
import type { ObjectRef } from './types';
import { Qwen2 } from '../model/qwen2';
import { tokenizerFromJSON, Tokenizer } from '../model/tokenizer';
import { configFromJSONBytes, configToJSONBytes, modelFromSafetensors, modelToSafetensors } from '../model/weights_io';
import { AdamW } from '../algo/adamw';

/** What trainer_state.json holds. */
export interface TrainerState {
  /** Pipeline steps (updates) completed when this checkpoint was written. */
  step: number;
  /** AdamW settings the optimizer state belongs to. */
  betas: [number, number];
  weightDecay: number;
  /** Scalar facts about how the checkpoint was made (metrics of its update or warm-up). */
  metrics: Record<string, number>;
}

/** A loaded checkpoint. The caller owns (and disposes) the model and optimizer. */
export interface PolicyCheckpoint {
  model: Qwen2;
  tokenizer: Tokenizer;
  /** null when the checkpoint has no optimizer state (e.g. the warm-up): start a fresh AdamW. */
  optimizer: AdamW | null;
  state: TrainerState;
}

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value, null, 1));
const parse = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes)) as unknown;

/** The trainer_state.json of a checkpoint's files (as read by storage/manifest readCheckpoint). */
export function trainerStateOf(files: Record<string, Uint8Array>): TrainerState {
  return parse(files['trainer_state.json']) as TrainerState;
}

/**
 * Writes a checkpoint under `prefix` and returns its manifest ref.
 * @throws Error from the object store (retried by Temporal)
 */
export async function saveCheckpoint(store: ObjectStore, prefix: string, c: { model: Qwen2; tokenizer: Tokenizer; optimizer: AdamW | null; state: TrainerState }): Promise<ObjectRef> {
  const files: Record<string, Uint8Array> = {
    'model.safetensors': await modelToSafetensors(c.model),
    'config.json': configToJSONBytes(c.model.config),
    'tokenizer.json': json(c.tokenizer.toJSON()),
    'trainer_state.json': json(c.state),
  };
  if (c.optimizer) files['optimizer.safetensors'] = await c.optimizer.toSafetensors();
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
  const tokenizer = tokenizerFromJSON(parse(files['tokenizer.json']));
  const optimizer = files['optimizer.safetensors']
    ? AdamW.fromSafetensors(files['optimizer.safetensors'], { betas: state.betas, weightDecay: state.weightDecay })
    : null;
  return { model, tokenizer, optimizer, state };
}
