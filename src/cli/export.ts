/**
 * `starpo export <runId> [--step N] [--merge] --to DIR`: an HF-format model folder (model/hf/folder.ts) from a
 * checkpoint of a run, read and sha256-verified from the object store (default: the newest complete
 * checkpoint, falling back as `resume` does). The files go to a temp folder next to DIR that is then
 * renamed to DIR, so DIR is either complete or absent. `pretrain: DIR` loads the folder again. A LoRA run's
 * checkpoint becomes a PEFT adapter folder (`PeftModel.from_pretrained(base, DIR)`) with its base model's HF folder
 * in DIR/base, or with --merge one HF folder of the merged weights.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { ObjectRef, RunSpec } from '../contract';
import { initBackend } from '../model/backend';
import { defaultBackend, hostBackends } from '../model/backend_choice';
import { hfFolderFiles } from '../model/hf/folder';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS } from '../model/hf/peft_config';
import { streamedBytes } from '../model/hf/safetensors';
import { tensorsSafetensors } from '../model/hf/weights';
import type { LoraAdapters } from '../model/lora';
import { type CompleteCheckpoint, readCheckpoint } from '../storage/checkpoint';
import type { ObjectStore } from '../storage/object_store';
import { disposeCheckpoint, loadCheckpoint, trainerStateOf } from '../storage/policy_checkpoint';
import { writeFolderAtomically } from '../util/atomic_folder';
import { BadInputError } from './exit_codes';
import { loadRunSpec } from './known_run';
import { pickCheckpoint } from './pick_checkpoint';

/** What was exported: the folder, the checkpoint's step and manifest key, and each file's size in bytes. */
export interface ExportResult {
  dir: string;
  step: number;
  manifestKey: string;
  files: Array<{ name: string; bytes: number }>;
}

/** @throws BadInputError when `dir` exists and is not an empty folder */
function checkTarget(dir: string): void {
  if (!existsSync(dir)) return;
  if (!statSync(dir).isDirectory()) throw new BadInputError(`--to ${dir}: exists and is not a folder; allowed: a new or empty folder`);
  if (readdirSync(dir).length > 0) throw new BadInputError(`--to ${dir}: the folder is not empty; allowed: a new or empty folder`);
}

/**
 * Exports a checkpoint of `runId` as an HF model folder at `to`.
 * @param step the checkpoint's step (0 = the run's step-0 policy); default the newest complete one
 * @throws InvalidKeyPartError / BadInputError (exit 2) for a bad run id, an unknown run, a missing step
 *   or a non-empty `to`; InfraUnavailableError (exit 3) when the S3 server does not answer;
 *   CorruptObjectError when the chosen checkpoint does not verify
 */
export async function exportCheckpoint(
  store: ObjectStore,
  runId: string,
  opts: { step?: number; to: string; merge?: boolean; log: (line: string) => void },
): Promise<ExportResult> {
  const dir = resolve(opts.to);
  checkTarget(dir);
  const spec = await loadRunSpec(store, runId);
  const checkpoint = await pickCheckpoint(store, runId, opts.step, opts.step === undefined ? 'export' : `--step ${opts.step}`, opts.log);
  const files = checkpoint.files[ADAPTER_WEIGHTS]
    ? await adapterExport(store, spec, checkpoint, dir, opts.merge === true)
    : hfFolderFiles(checkpoint.files, spec.config.actor_infer.generating_args);
  checkTarget(dir); // again: it may have been filled meanwhile
  writeFolderAtomically(dir, files);
  return {
    dir,
    step: checkpoint.step,
    manifestKey: checkpoint.ref.key,
    files: Object.entries(files).map(([name, bytes]) => ({ name, bytes: bytes.length })),
  };
}

/**
 * The folder of a LoRA checkpoint: PEFT's adapter files (base_model_name_or_path naming DIR/base) and the base's HF
 * folder under base/, or with `merge` the HF folder of the merged weights (computed with tfjs).
 */
async function adapterExport(
  store: ObjectStore,
  spec: RunSpec,
  checkpoint: CompleteCheckpoint,
  dir: string,
  merge: boolean,
): Promise<Record<string, Uint8Array>> {
  const generating = spec.config.actor_infer.generating_args;
  if (merge) return hfFolderFiles({ ...checkpoint.files, 'model.safetensors': await mergedWeights(store, checkpoint.ref) }, generating);
  const base = trainerStateOf(checkpoint.files).base;
  if (!base) throw new Error(`${checkpoint.ref.key}: the adapter checkpoint names no base checkpoint`);
  const baseFiles = hfFolderFiles((await readCheckpoint(store, base)).files, generating);
  const config = JSON.parse(new TextDecoder().decode(checkpoint.files[ADAPTER_CONFIG]));
  const adapterConfig = new TextEncoder().encode(`${JSON.stringify({ ...config, base_model_name_or_path: join(dir, 'base') }, null, 2)}\n`);
  return {
    [ADAPTER_CONFIG]: adapterConfig,
    [ADAPTER_WEIGHTS]: checkpoint.files[ADAPTER_WEIGHTS] as Uint8Array,
    ...Object.fromEntries(Object.entries(baseFiles).map(([name, bytes]) => [`base/${name}`, bytes])),
  };
}

/** model.safetensors of a LoRA checkpoint's merged weights (W + scale * B A, as PEFT's merge_and_unload), on the update's backend. */
async function mergedWeights(store: ObjectStore, manifest: ObjectRef): Promise<Uint8Array> {
  await initBackend(defaultBackend('update', hostBackends()));
  const c = await loadCheckpoint(store, manifest);
  try {
    const weights = c.model.toNamedTensors();
    const merged = (c.model.adapters() as LoraAdapters).mergedInto(weights);
    try {
      return await streamedBytes(tensorsSafetensors(merged));
    } finally {
      tf.dispose([...merged].filter(([name, t]) => weights.get(name) !== t).map(([, t]) => t));
    }
  } finally {
    disposeCheckpoint(c);
  }
}
