/** A LoRA model's adapters as PEFT's files (peft_config.ts), and the adapters of a PEFT folder. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { StreamedObject } from '../../contract';
import type { Qwen2Config } from '../config';
import { LoraAdapters } from '../lora';
import {
  ADAPTER_CONFIG,
  ADAPTER_WEIGHTS,
  adapterConfig,
  fromPeftTensorName,
  loraSettingsOfAdapterConfig,
  peftTensorName,
} from './peft_config';
import { decodeSafetensors, toFloat32 } from './safetensors';
import { tensorsSafetensors } from './weights';

/** A model's adapters as PEFT's two files, the config naming `baseModel` as base_model_name_or_path. */
export function adapterFiles(
  cfg: Qwen2Config,
  adapters: LoraAdapters,
  baseModel: string,
): { [ADAPTER_WEIGHTS]: StreamedObject; [ADAPTER_CONFIG]: Uint8Array } {
  const named = new Map([...adapters.variables()].map(([name, v]) => [peftTensorName(name), v]));
  const config = adapterConfig(cfg, adapters.settings, baseModel);
  return { [ADAPTER_WEIGHTS]: tensorsSafetensors(named), [ADAPTER_CONFIG]: new TextEncoder().encode(JSON.stringify(config, null, 2)) };
}

/**
 * The adapters of a PEFT adapter folder (ROLL's adapter_name_or_path) for a model of config `cfg`: its LoRA settings
 * and tensors (F32, F16 or BF16, widened to float32).
 * @throws Error naming the file and what is wrong (a missing file, an unsupported setting, a tensor the model has no place for)
 */
export function adaptersFromFolder(cfg: Qwen2Config, dir: string): LoraAdapters {
  const configPath = join(dir, ADAPTER_CONFIG);
  const weightsPath = join(dir, ADAPTER_WEIGHTS);
  const settings = loraSettingsOfAdapterConfig(JSON.parse(readFileSync(configPath, 'utf8')), configPath);
  const named = new Map<string, tf.Tensor>();
  try {
    for (const [key, t] of Object.entries(decodeSafetensors(readFileSync(weightsPath)).tensors)) {
      named.set(fromPeftTensorName(key), tf.tensor(toFloat32(t), t.shape, 'float32'));
    }
    return LoraAdapters.fromNamedTensors(cfg, settings, named);
  } catch (err) {
    throw new Error(`${weightsPath}: ${(err as Error).message}`);
  } finally {
    tf.dispose([...named.values()]);
  }
}
