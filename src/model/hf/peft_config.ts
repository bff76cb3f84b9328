/**
 * Hugging Face PEFT's LoRA adapter folder (what `PeftModel.save_pretrained` writes and `PeftModel.from_pretrained`
 * reads): adapter_config.json and adapter_model.safetensors, whose tensors are the model's names under
 * `base_model.model.` (`...q_proj.lora_A.weight`; a modules_to_save weight under its own name). starpo keeps a LoRA
 * run's checkpoints in this format, so an export is the checkpoint's own two files. The file names and the config,
 * without tfjs (config checks read adapter folders); peft.ts reads and writes the tensors.
 */
import type { LoraSettings } from '../../contract';
import type { Qwen2Config } from '../config';
import { loraTargets } from '../lora_targets';

export const ADAPTER_CONFIG = 'adapter_config.json';
export const ADAPTER_WEIGHTS = 'adapter_model.safetensors';
const PREFIX = 'base_model.model.';

/** PEFT's name of a LoraAdapters tensor (lora.ts `variables`). */
export function peftTensorName(name: string): string {
  return `${PREFIX}${name}`;
}

/** The LoraAdapters name of a tensor of a PEFT adapter file. @throws Error naming a tensor outside PEFT's naming */
export function fromPeftTensorName(key: string): string {
  if (!key.startsWith(PREFIX))
    throw new Error(`tensor ${key} is not named as PEFT names adapter tensors (${PREFIX}<module>.lora_A.weight)`);
  return key.slice(PREFIX.length);
}

/**
 * adapter_config.json for LoRA settings on a model: the target modules as ROLL's lora_target named them (`all`
 * spelled out as the linear layers it chose, a regular expression as it is) and PEFT's defaults for the rest.
 */
export function adapterConfig(cfg: Qwen2Config, settings: LoraSettings, baseModel: string): Record<string, unknown> {
  const linears = () => loraTargets(cfg, { kind: 'names', names: ['all'] }).map((m) => m.slice(m.lastIndexOf('.') + 1));
  const target =
    settings.target.kind === 'regex'
      ? settings.target.pattern
      : [...new Set(settings.target.names.flatMap((n) => (n === 'all' ? linears() : [n])))];
  return {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: baseModel,
    r: settings.rank,
    lora_alpha: settings.alpha,
    lora_dropout: settings.dropout,
    target_modules: target,
    modules_to_save: settings.additional.length > 0 ? settings.additional : null,
    bias: 'none',
    fan_in_fan_out: false,
    use_rslora: false,
    use_dora: false,
    init_lora_weights: true,
    inference_mode: true,
  };
}

/** PEFT keys whose non-default value changes the computation in a way starpo does not implement. */
const UNSUPPORTED: Array<[string, (v: unknown) => boolean, string]> = [
  ['peft_type', (v) => v !== 'LORA', 'LORA'],
  ['bias', (v) => v !== undefined && v !== 'none', 'none'],
  ['fan_in_fan_out', (v) => v === true, 'false'],
  ['use_rslora', (v) => v === true, 'false'],
  ['use_dora', (v) => v === true, 'false'],
  ['layers_to_transform', (v) => v !== undefined && v !== null, 'null'],
  ['rank_pattern', (v) => v !== undefined && v !== null && Object.keys(v as object).length > 0, '{}'],
  ['alpha_pattern', (v) => v !== undefined && v !== null && Object.keys(v as object).length > 0, '{}'],
  ['lora_bias', (v) => v === true, 'false'],
  ['exclude_modules', (v) => v !== undefined && v !== null, 'null'],
  ['layer_replication', (v) => v !== undefined && v !== null, 'null'],
  ['target_parameters', (v) => v !== undefined && v !== null, 'null'],
  ['trainable_token_indices', (v) => v !== undefined && v !== null, 'null'],
  ['alora_invocation_tokens', (v) => v !== undefined && v !== null, 'null'],
];

/**
 * The LoRA settings of a PEFT adapter_config.json. `source` names the file in messages.
 * @throws Error naming the key, its value and what is allowed
 */
export function loraSettingsOfAdapterConfig(json: Record<string, unknown>, source: string): LoraSettings {
  for (const [key, bad, allowed] of UNSUPPORTED) {
    if (bad(json[key])) throw new Error(`${source}: ${key} is ${JSON.stringify(json[key])}; allowed: ${allowed}`);
  }
  const r = json.r;
  if (typeof r !== 'number' || !Number.isInteger(r) || r < 1)
    throw new Error(`${source}: r is ${JSON.stringify(r)}; allowed: a whole number >= 1`);
  const alpha = json.lora_alpha ?? 8; // PEFT's LoraConfig default
  if (typeof alpha !== 'number' || !(alpha > 0))
    throw new Error(`${source}: lora_alpha is ${JSON.stringify(alpha)}; allowed: a number > 0`);
  const dropout = json.lora_dropout ?? 0;
  if (typeof dropout !== 'number' || dropout < 0 || dropout >= 1)
    throw new Error(`${source}: lora_dropout is ${JSON.stringify(dropout)}; allowed: 0 <= p < 1`);
  const t = json.target_modules;
  const names = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
  let target: LoraSettings['target'];
  if (typeof t === 'string') target = t === 'all-linear' ? { kind: 'names', names: ['all'] } : { kind: 'regex', pattern: t };
  else if (names(t)) target = { kind: 'names', names: t as string[] };
  else throw new Error(`${source}: target_modules is ${JSON.stringify(t)}; allowed: a list of module names or a regular expression`);
  const save = json.modules_to_save ?? [];
  if (!names(save)) throw new Error(`${source}: modules_to_save is ${JSON.stringify(save)}; allowed: a list of module names or null`);
  return { target, rank: r, alpha, dropout, additional: save as string[] };
}
