/**
 * actor_train.model_args: ROLL's ModelArguments (roll/configs/model_args.py). starpo uses the keys that decide
 * what is trained and how the update's memory is spent: LoRA (ROLL's LoraArguments, applied as Hugging Face PEFT
 * applies them), freeze_module_prefix, disable_gradient_checkpointing, and model_name_or_path (which must name the
 * run's `pretrain`). The others choose dtypes, attention kernels and device maps of ROLL's workers: ignored.
 */
import { z } from 'zod';
import { ignoredShape } from './ignored';

/** A comma-separated list as ROLL's ModelArguments splits it (a YAML list is taken as is). */
const nameList = z
  .union([z.string(), z.array(z.string())])
  .nullable()
  .default(null);

/** The keys of ModelArguments starpo accepts and does not use (reported as ignored). */
const IGNORED_MODEL_ARGS = [
  'attn_implementation',
  'moe_aux_loss_coef',
  'gradient_checkpointing_use_reentrant',
  'device_map',
  'dtype',
  'model_type',
  'num_labels',
  'ulysses_size',
  'vision_dp',
  'autocast_adapter_dtype',
] as const;

export const actorModelArgsSchema = z
  .object({
    disable_gradient_checkpointing: z.boolean().nullable().default(false), // ROLL: Optional[bool], None enables it too
    model_name_or_path: z.string().nullable().default(null),
    /** Module names (comma list), `all` (every linear layer of the decoder) or a regular expression; null: no LoRA. */
    lora_target: nameList,
    lora_rank: z.number().int({ error: 'allowed: a whole number >= 1' }).positive({ error: 'allowed: a whole number >= 1' }).default(8),
    /** null: 2 x lora_rank, as ROLL's ModelArguments.__post_init__ (resolved in the validated config). */
    lora_alpha: z.number().positive().nullable().default(null),
    lora_dropout: z.number().gte(0).lt(1).default(0),
    /** Modules trained in full beside the adapters (PEFT's modules_to_save). */
    additional_target: nameList,
    /** A PEFT adapter folder (adapter_config.json, adapter_model.safetensors) the run starts from. */
    adapter_name_or_path: z.string().min(1).nullable().default(null),
    /** Weights whose HF name starts with one of these prefixes get no gradient (LLaMA-Factory's freeze tuning). */
    freeze_module_prefix: nameList,
    /** Keyword arguments for the model's config: a model folder's config.json fixes it here, so only {} is accepted. */
    model_config_kwargs: z.record(z.string(), z.unknown()).default({}),
    ...ignoredShape(IGNORED_MODEL_ARGS),
  })
  .strict();

export type ActorModelArgs = z.infer<typeof actorModelArgsSchema>;

/** ROLL's list split: a string is split at commas (each part trimmed, empty parts dropped), a list kept, null empty. */
export function splitNames(value: string | readonly string[] | null): string[] {
  if (value === null) return [];
  const parts = typeof value === 'string' ? value.split(',') : value;
  return parts.map((p) => p.trim()).filter((p) => p.length > 0);
}

/**
 * LoRA as the run applies it (PEFT's LoraConfig), or null when lora_target is unset. `target` keeps ROLL's reading:
 * a string with any of `* $ | (` is a regular expression matched against whole module names, else a list of
 * module names (`all`: every linear layer of the decoder).
 */
export interface LoraSettings {
  target: { kind: 'names'; names: string[] } | { kind: 'regex'; pattern: string };
  rank: number;
  alpha: number;
  dropout: number;
  /** Module names trained in full beside the adapters. */
  additional: string[];
}

/**
 * The run's LoRA settings from actor_train.model_args, ROLL's defaults applied; null without lora_target (or
 * without model_args: a run stored before the block existed).
 */
export function loraSettings(
  args: Pick<ActorModelArgs, 'lora_target' | 'lora_rank' | 'lora_alpha' | 'lora_dropout' | 'additional_target'> | undefined,
): LoraSettings | null {
  if (args?.lora_target == null) return null;
  const raw = args.lora_target;
  const target: LoraSettings['target'] =
    typeof raw === 'string' && /[*$|(]/.test(raw) ? { kind: 'regex', pattern: raw } : { kind: 'names', names: splitNames(raw) };
  return {
    target,
    rank: args.lora_rank,
    alpha: args.lora_alpha ?? 2 * args.lora_rank,
    dropout: args.lora_dropout,
    additional: splitNames(args.additional_target),
  };
}

/** Whether freeze_module_prefix leaves the weight (or adapter) `name` out of the update: it starts with one of the prefixes. */
export function frozenBy(args: Pick<ActorModelArgs, 'freeze_module_prefix'> | undefined): (name: string) => boolean {
  const prefixes = splitNames(args?.freeze_module_prefix ?? null);
  return (name) => prefixes.some((p) => name.startsWith(p));
}
