/**
 * The model and algorithm tests again, on each native TensorFlow build. Every test file that imports
 * test/helpers/backend.ts computes on STARPO_BACKEND's backend (wasm when it is unset, as in npm test's own
 * run). Here each such file runs in a child `node --test` with STARPO_BACKEND=tensorflow, and again with
 * STARPO_BACKEND=tensorflow-gpu (the GPU build, on whatever device it finds): tfjs keeps one engine per
 * process, so another backend needs another process. A build that is not installed (`starpo backend install
 * [--gpu]`) has its runs skipped, saying why.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { inspectNativeBuild, installCommand, NATIVE_VARIANTS, nativeBuildDir } from '../../src/model/native_build';

const DIR = 'test/unit';
const IMPORTS_HELPER = /^import .* from '(?:\.\.\/)+helpers\/backend';$/m;
const files = (fs.readdirSync(DIR, { recursive: true }) as string[])
  .filter((f) => f.endsWith('.test.ts') && IMPORTS_HELPER.test(fs.readFileSync(path.join(DIR, f), 'utf8')))
  .sort();

test('the files run on both backends include the model, attention, gradient, loss and update tests', () => {
  for (const f of [
    'model/model',
    'model/attention',
    'algo/grad_fd',
    'algo/loss',
    'algo/kl',
    'algo/update',
    'algo/determinism',
    'model/hf_fidelity',
  ]) {
    assert.ok(files.includes(`${f}.test.ts`), `${f}.test.ts imports test/helpers/backend.ts`);
  }
});

for (const v of NATIVE_VARIANTS) {
  const skip =
    inspectNativeBuild(v).state === 'installed'
      ? false
      : `no ${v.variant.toUpperCase()} build in ${nativeBuildDir(v)}; run ${installCommand(v)}`;
  for (const file of files) {
    test(`${file} on the native ${v.backend} backend`, { skip }, () => {
      const env: NodeJS.ProcessEnv = { ...process.env, STARPO_BACKEND: v.backend };
      delete env.NODE_TEST_CONTEXT; // else the child reports to this runner's protocol instead of printing TAP
      const res = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', path.join(DIR, file)], {
        encoding: 'utf8',
        env,
        timeout: 600_000,
      });
      const failures = res.stdout
        .split('\n')
        .filter((l) => l.trim().startsWith('not ok'))
        .join('\n');
      assert.equal(res.status, 0, `${file} failed on ${v.backend}:\n${failures}\n${res.stdout.slice(-4000)}\n${res.stderr.slice(-2000)}`);
      assert.ok(Number(/^# pass (\d+)$/m.exec(res.stdout)?.[1]) > 0, `${file} ran no test on ${v.backend}:\n${res.stdout.slice(-2000)}`);
    });
  }
}
