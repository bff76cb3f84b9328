/**
 * Which modules LoRA adapts (lora.ts), without tfjs, so config checks can resolve ROLL's lora_target and
 * additional_target against a model's config: module names matched as PEFT matches them (the whole name or its
 * last components), `all` for every linear layer of the decoder, or a regular expression over whole module names.
 */
import type { LoraSettings } from '../contract';
import { type Qwen2Config, weightShapes } from './config';

/** The names of the linear layers LoRA may adapt (`all`): every linear of every decoder layer, not lm_head. */
const DECODER_LINEARS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;

/** The modules of a model: every weight's name without its last component (`.weight` / `.bias`), with the weight's shape. */
export function modules(cfg: Qwen2Config): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const [name, shape] of weightShapes(cfg)) {
    const module = name.slice(0, name.lastIndexOf('.'));
    if (name.endsWith('.weight')) out.set(module, shape);
  }
  return out;
}

/** PEFT's match of a target name against a module name: the whole name, or its trailing dotted components. */
const namesModule = (target: string, module: string) => module === target || module.endsWith(`.${target}`);

/** The decoder's linear modules, by full name: `model.layers.<l>.self_attn.q_proj` ... `mlp.down_proj`. */
function decoderLinears(cfg: Qwen2Config): string[] {
  return [...modules(cfg).keys()].filter((m) => DECODER_LINEARS.some((l) => m.endsWith(`.${l}`)));
}

/**
 * The linear modules lora_target adapts, by full name, in the model's weight order.
 * @throws Error naming the target that matches no adaptable module, and what is allowed
 */
export function loraTargets(cfg: Qwen2Config, target: LoraSettings['target']): string[] {
  const linears = decoderLinears(cfg);
  const allowed = `allowed: all, a comma list of ${DECODER_LINEARS.join(', ')} (or longer dotted names such as self_attn.q_proj or model.layers.0.mlp.up_proj), or a regular expression matching whole names of those modules`;
  if (target.kind === 'regex') {
    let re: RegExp;
    try {
      re = new RegExp(`^(?:${target.pattern})$`);
    } catch (err) {
      throw new Error(`"${target.pattern}" is not a valid regular expression (${(err as Error).message}); ${allowed}`);
    }
    const hit = linears.filter((m) => re.test(m));
    if (hit.length === 0) throw new Error(`"${target.pattern}" matches no linear layer of the decoder; ${allowed}`);
    return hit;
  }
  if (target.names.length === 0) throw new Error(`names no module; ${allowed}`);
  const chosen = new Set<string>();
  for (const name of target.names) {
    const hit = name === 'all' ? linears : linears.filter((m) => namesModule(name, m));
    if (hit.length === 0) throw new Error(`"${name}" names no linear layer of the decoder; ${allowed}`);
    for (const m of hit) chosen.add(m);
  }
  return linears.filter((m) => chosen.has(m));
}

/**
 * The base weights (HF names) of the modules additional_target names, trained in full beside the adapters.
 * @throws Error naming the module name that matches no module of the model
 */
export function additionalWeights(cfg: Qwen2Config, names: readonly string[]): string[] {
  const all = weightShapes(cfg).map(([name]) => name);
  const out = new Set<string>();
  for (const target of names) {
    const hit = all.filter((w) => namesModule(target, w.slice(0, w.lastIndexOf('.'))));
    if (hit.length === 0) {
      const kinds = [...new Set([...modules(cfg).keys()].map((m) => m.split('.').pop()))].join(', ');
      throw new Error(`"${target}" names no module of the model; allowed: module names such as ${kinds}`);
    }
    for (const w of hit) out.add(w);
  }
  return all.filter((w) => out.has(w));
}
