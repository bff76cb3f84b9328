/**
 * actor_train.model_args against the run's model: every key that changes what is trained is used or refused by
 * name, never ignored. LoRA's targets and additional targets must name modules of the model, freeze prefixes
 * must name weights, model_name_or_path must be the run's `pretrain`, and the critic (which trains every weight)
 * takes none of those keys.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { show } from '../config/issues';
import { type LoraSettings, loraSettings, type RunConfig, splitNames } from '../contract';
import { type Qwen2Config, TINY_PRESET, tinyPreset, weightShapes } from '../model/config';
import { pretrainedProblems, readPretrainedConfig } from '../model/hf/folder';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS, loraSettingsOfAdapterConfig } from '../model/hf/peft_config';
import { additionalWeights, loraTargets } from '../model/lora_targets';
import { charTokenizer } from '../model/tokenizer';

const KEY = '`actor_train.model_args';
/** The model_args keys that change what an update trains (refused in the critic's block, which ignores model_args). */
const TRAINING_KEYS = ['lora_target', 'additional_target', 'adapter_name_or_path', 'freeze_module_prefix'] as const;

/** The run's model config, or null when `pretrain` has problems of its own (reported by pretrainProblems). */
function modelConfigOf(cfg: RunConfig): Qwen2Config | null {
  try {
    if (cfg.pretrain === TINY_PRESET) return tinyPreset(charTokenizer().vocabSize, cfg.config_overrides);
    return pretrainedProblems(cfg.pretrain, cfg.sequence_length).length === 0 ? readPretrainedConfig(cfg.pretrain) : null;
  } catch {
    return null;
  }
}

/** Runs `check`, returning its error's message as a problem of `key`. */
function problemOf(key: string, check: () => unknown): string[] {
  try {
    check();
    return [];
  } catch (err) {
    return [`${KEY}.${key}\`: ${(err as Error).message}`];
  }
}

/**
 * adapter_name_or_path: a PEFT folder whose adapter_config.json starpo computes, whose targets name modules of the
 * model, and which agrees with lora_target and lora_rank when those are set too (the folder decides otherwise).
 */
function adapterFolderProblems(dir: string, lora: LoraSettings | null, model: Qwen2Config | null): string[] {
  const key = `${KEY}.adapter_name_or_path\``;
  const missing = [ADAPTER_CONFIG, ADAPTER_WEIGHTS].filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0)
    return [`${key}: ${show(dir)} is not a PEFT adapter folder (no ${missing.join(', ')}); allowed: a folder PEFT's save_pretrained wrote`];
  let folder: LoraSettings;
  try {
    folder = loraSettingsOfAdapterConfig(JSON.parse(readFileSync(join(dir, ADAPTER_CONFIG), 'utf8')), join(dir, ADAPTER_CONFIG));
  } catch (err) {
    return [`${key}: ${(err as Error).message}`];
  }
  if (!model) return [];
  let targets: string[];
  try {
    targets = loraTargets(model, folder.target);
  } catch (err) {
    return [`${key}: ${join(dir, ADAPTER_CONFIG)} target_modules ${(err as Error).message}`];
  }
  if (!lora) return [];
  let ours: string[];
  try {
    ours = loraTargets(model, lora.target);
  } catch {
    return []; // reported for lora_target itself
  }
  if (lora.rank === folder.rank && ours.join() === targets.join()) return [];
  return [
    `${key}: the folder's adapters (r ${folder.rank}, ${targets.length} modules) differ from lora_target / lora_rank (r ${lora.rank}, ${ours.length} modules); drop lora_target and lora_rank (the folder decides) or make them agree`,
  ];
}

/** Every problem of actor_train.model_args (and of the keys the critic's block must not set), one line each. */
export function modelArgsProblems(cfg: RunConfig): string[] {
  const args = cfg.actor_train.model_args;
  const problems: string[] = [];
  const lora = loraSettings(args);
  const model = modelConfigOf(cfg);
  if (lora && model) {
    problems.push(...problemOf('lora_target', () => loraTargets(model, lora.target)));
    problems.push(...problemOf('additional_target', () => additionalWeights(model, lora.additional)));
  }
  if (!lora && splitNames(args.additional_target).length > 0) {
    problems.push(
      `${KEY}.additional_target\`: ${show(args.additional_target)} trains modules beside LoRA adapters; set lora_target too (or drop it)`,
    );
  }
  if (args.adapter_name_or_path !== null) problems.push(...adapterFolderProblems(args.adapter_name_or_path, lora, model));
  const prefixes = splitNames(args.freeze_module_prefix);
  if (model && prefixes.length > 0) {
    const names = weightShapes(model).map(([n]) => n);
    for (const p of prefixes.filter((p) => !names.some((n) => n.startsWith(p)))) {
      problems.push(
        `${KEY}.freeze_module_prefix\`: ${show(p)} is the prefix of no weight of the model; allowed: prefixes of HF weight names such as model.embed_tokens or model.layers.0`,
      );
    }
  }
  if (args.model_name_or_path !== null && args.model_name_or_path !== cfg.pretrain) {
    problems.push(
      `${KEY}.model_name_or_path\`: ${show(args.model_name_or_path)} is not the run's pretrain (${show(cfg.pretrain)}); starpo trains \`pretrain\`: set model_name_or_path to \${pretrain}, or drop it`,
    );
  }
  if (Object.keys(args.model_config_kwargs).length > 0) {
    problems.push(
      `${KEY}.model_config_kwargs\`: ${show(args.model_config_kwargs)} would change the model's config; allowed: {} (the model folder's config.json, or config_overrides with pretrain: tiny, sets it)`,
    );
  }
  const critic = (cfg.critic as { model_args?: Record<string, unknown> }).model_args ?? {};
  for (const key of TRAINING_KEYS.filter((k) => critic[k] !== undefined && critic[k] !== null)) {
    problems.push(`\`critic.model_args.${key}\`: ${show(critic[key])} is not supported: the critic trains every weight; drop it`);
  }
  return problems;
}
