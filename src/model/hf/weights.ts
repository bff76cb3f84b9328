/**
 * A Qwen2 or Llama model as files with HF names: model.safetensors (F32, [out, in] linear weights) and config.json, as
 * checkpoints write and read them, and the model of an HF folder (folder.ts). Apart from folder.ts because it
 * needs tfjs, which config-time checks of a folder do not load.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import type { StreamedObject } from '../../contract';
import { type Qwen2Config, validateQwen2Config } from '../config';
import { Qwen2 } from '../qwen2';
import type { ChatTokenizer } from '../tokenizer';
import { readPretrainedConfig, readPretrainedTokenizer, weightFiles } from './folder';
import {
  decodeSafetensors,
  type SafeTensor,
  type SafeTensorSpec,
  SafetensorsDecoder,
  safetensorsStream,
  streamedBytes,
  toFloat32,
} from './safetensors';

/** Elements per piece when a weight is read off the device for a stream (the largest, the embedding, is 100M+). */
const PIECE_ELEMENTS = 8 * 1024 * 1024;

/** A float32 tensor's values in blocks of whole rows of at most PIECE_ELEMENTS elements, each read and then freed. */
async function* rowBlocks(t: tf.Tensor): AsyncIterable<Float32Array> {
  const rows = t.shape[0] ?? 1;
  if (t.size <= PIECE_ELEMENTS || t.rank === 0) {
    yield (await t.data()) as Float32Array;
    return;
  }
  const perBlock = Math.max(1, Math.floor(PIECE_ELEMENTS / (t.size / rows)));
  for (let r = 0; r < rows; r += perBlock) {
    const block = tf.slice(t, r, Math.min(perBlock, rows - r));
    try {
      yield (await block.data()) as Float32Array;
    } finally {
      block.dispose();
    }
  }
}

/** A safetensors file's tensors on the backend (float32), by name, and its __metadata__ map. */
export interface BackendSafetensors {
  tensors: Map<string, tf.Tensor>;
  metadata: Record<string, string>;
}

/**
 * A decoded float32 tensor in backend memory now. A backend may keep an uploaded host array as the tensor's data
 * until a kernel reads it (native TensorFlow does), so the host copy would live on beside the backend's; a full
 * slice copies it here, without arithmetic (native TensorFlow's multiply flushes subnormals), and the host array
 * can go at once.
 */
export function tensorOnBackend(t: SafeTensor): tf.Tensor {
  return tf.tidy(() => tf.reshape(tf.slice(tf.tensor1d(toFloat32(t), 'float32'), 0, t.data.length), t.shape));
}

/**
 * Float32 tensors with HF names as a safetensors stream (metadata format pt), read off the device a row block at a
 * time as the stream is consumed: what a checkpoint uploads, without the file or a copy of the weights in memory.
 */
export function tensorsSafetensors(named: Map<string, tf.Tensor>, metadata: Record<string, string> = { format: 'pt' }): StreamedObject {
  const specs: Record<string, SafeTensorSpec> = {};
  for (const [name, t] of named) specs[name] = { dtype: 'F32', shape: [...t.shape] };
  return safetensorsStream(specs, metadata, (name) => rowBlocks(named.get(name) as tf.Tensor));
}

/** The model's weights as F32 safetensors (HF names, [out, in] linear weights; tied lm_head omitted as HF does), streamed. */
export function modelSafetensors(model: Qwen2): StreamedObject {
  return tensorsSafetensors(model.toNamedTensors());
}

/** modelSafetensors's bytes in one buffer. */
export async function modelToSafetensors(model: Qwen2): Promise<Uint8Array> {
  return streamedBytes(modelSafetensors(model));
}

/**
 * Builds a model from decoded safetensors tensors, e.g. the shards of an HF folder merged (F32, F16 or BF16
 * weights are converted to float32; extra tensors are ignored).
 * @throws Error from Qwen2.fromNamedTensors (missing weight, shape mismatch).
 */
export function modelFromTensors(config: Qwen2Config, tensors: Record<string, SafeTensor>): Qwen2 {
  const map = new Map<string, tf.Tensor>();
  try {
    for (const [name, t] of Object.entries(tensors)) map.set(name, tf.tensor(toFloat32(t), t.shape, 'float32'));
    return Qwen2.fromNamedTensors(config, map);
  } finally {
    for (const t of map.values()) t.dispose();
  }
}

/**
 * Builds a model from safetensors bytes (see modelFromTensors).
 * @throws Error from decodeSafetensors or Qwen2.fromNamedTensors (missing weight, shape mismatch).
 */
export function modelFromSafetensors(config: Qwen2Config, bytes: Uint8Array): Qwen2 {
  return modelFromTensors(config, decodeSafetensors(bytes).tensors);
}

/** config.json bytes (UTF-8, indented) for a config. */
export function configToJSONBytes(config: Qwen2Config): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(config, null, 2));
}

/** Parses and validates config.json bytes. @throws Error from validateQwen2Config or JSON.parse. */
export function configFromJSONBytes(bytes: Uint8Array): Qwen2Config {
  return validateQwen2Config(JSON.parse(new TextDecoder().decode(bytes)));
}

/**
 * Loads the model (weights converted to float32) and tokenizer of an HF Qwen2 or Llama folder (folder.ts).
 * @throws PretrainedFolderError for a missing or invalid file; Error from modelFromTensors (missing weight,
 *   shape mismatch) or decodeSafetensors (corrupt file)
 */
export function modelFromFolder(dir: string): { model: Qwen2; tokenizer: ChatTokenizer } {
  const config = readPretrainedConfig(dir);
  const tokenizer = readPretrainedTokenizer(dir);
  return { model: modelFromSafetensorsFiles(config, weightFiles(dir)), tokenizer };
}

/** Bytes read from a weights file at a time. */
const READ_BYTES = 16 * 1024 * 1024;

/**
 * Builds a model from safetensors files (the shards of a folder), read a piece at a time: each tensor goes to the
 * backend (as float32) once its bytes are in, so neither the files nor a host copy of the weights are held.
 * @throws Error from the decoder (corrupt file) or Qwen2.fromNamedTensors (missing weight, shape mismatch)
 */
export function modelFromSafetensorsFiles(config: Qwen2Config, files: readonly string[]): Qwen2 {
  const map = new Map<string, tf.Tensor>();
  const piece = Buffer.allocUnsafe(READ_BYTES);
  try {
    for (const file of files) {
      const fd = openSync(file, 'r');
      try {
        const decoder = new SafetensorsDecoder(fstatSync(fd).size, (name, t) => map.set(name, tensorOnBackend(t)));
        for (let n = readSync(fd, piece); n > 0; n = readSync(fd, piece)) decoder.write(piece.subarray(0, n));
        decoder.finish();
      } catch (err) {
        throw new Error(`${file}: ${(err as Error).message}`, { cause: err });
      } finally {
        closeSync(fd);
      }
    }
    return Qwen2.fromNamedTensors(config, map);
  } finally {
    tf.dispose([...map.values()]);
  }
}
