/**
 * `starpo backend check` through `node bin/starpo.js` as users run it, at a 1-layer shape with a small
 * vocabulary: on wasm, and on each native build that is installed (skipped, saying why, when it is not), it
 * names the backend and its device, counts the tokens it was asked for with positive rates, reports a peak RSS
 * and exits 0. Bad sizes exit 2 before any backend loads, naming the option, the value and what is allowed.
 * No timings are asserted.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { type CheckResult, formatBackendCheck } from '../../../src/cli/backend_check';
import { inspectNativeBuild, installCommand, NATIVE_VARIANTS, nativeBuildDir } from '../../../src/model/native_build';

const SMALL = [
  '--layers',
  '1',
  '--vocab',
  '500',
  '--batch',
  '2',
  '--micro-batch',
  '1',
  '--length',
  '12',
  '--rows',
  '2',
  '--prompt',
  '6',
  '--new-tokens',
  '3',
  '--rounds',
  '2',
];

/** `starpo backend check <args>`: exit code, stdout, stderr. */
function check(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const env = { ...process.env };
  delete env.STARPO_BACKEND; // each run names its backend
  const res = spawnSync(process.execPath, ['bin/starpo.js', 'backend', 'check', ...args], { env, encoding: 'utf8', timeout: 300_000 });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** Runs the small check on `backend` (with `extra` arguments) and checks what it reports. */
function checksOn(backend: string, extra: string[] = []): CheckResult {
  const res = check(['--backend', backend, ...SMALL, ...extra, '--json']);
  assert.equal(res.code, 0, res.stderr);
  const r = JSON.parse(res.stdout) as CheckResult;
  assert.equal(r.backend, backend);
  assert.equal(r.device, 'CPU'); // no GPU on the test hosts
  assert.deepEqual([r.model.layers, r.model.vocab], [1, 500]);
  assert.equal(r.update.rounds.length, 2);
  assert.equal(r.generation.rounds.length, 2);
  for (const t of r.update.rounds) {
    assert.equal(t.tokens, 2 * 12); // every token of batch x length
    assert.ok(t.seconds > 0 && t.tokensPerSecond > 0, JSON.stringify(t));
  }
  for (const t of r.generation.rounds) {
    assert.equal(t.tokens, 2 * 3); // rows x new tokens: no stop ids, every row decodes its budget
    assert.ok(t.seconds > 0 && t.tokensPerSecond > 0, JSON.stringify(t));
  }
  assert.ok(r.peakRssBytes > 0);
  const p = r.phasePeakRssBytes;
  for (const phase of [p.init, p.generation, p.update]) assert.ok(phase > 0 && phase <= r.peakRssBytes, JSON.stringify(p));
  const lines = formatBackendCheck(r);
  assert.equal(lines[0], `backend ${backend}, device CPU`);
  assert.match(lines.join('\n'), /update: 2 trajectories x 12 tokens, micro-batches of 1/);
  assert.match(lines.join('\n'), /rollout batch: 2 rows, 6-token prompts, 3 new tokens each/);
  assert.match(lines.join('\n'), /peak RSS [\d.]+ GiB; by phase: random init [\d.]+ GiB, generation [\d.]+ GiB, update [\d.]+ GiB/);
  return r;
}

test('backend check on wasm: the device, the requested tokens at positive rates, peak RSS by phase, exit 0', () => {
  assert.equal(checksOn('wasm').update.gradientCheckpointing, true, "on by default, ROLL's default");
});

test('backend check --gradient-checkpointing off: the update keeps its intermediates, and says so', () => {
  const r = checksOn('wasm', ['--gradient-checkpointing', 'off']);
  assert.equal(r.update.gradientCheckpointing, false);
  assert.match(formatBackendCheck(r).join('\n'), /one AdamW step, gradient checkpointing off/);
});

test('backend check --lora-target --lora-rank: adapters only, their trainable parameters counted as PEFT counts them', () => {
  const r = checksOn('wasm', ['--lora-target', 'q_proj,v_proj', '--lora-rank', '4']);
  // One layer of Qwen2.5-0.5B: q_proj 896 -> 896, v_proj 896 -> 128; r (in + out) each.
  assert.deepEqual(r.update.lora, { target: 'q_proj,v_proj', rank: 4, alpha: 8, trainableParams: 4 * (896 + 896) + 4 * (896 + 128) });
  assert.match(
    formatBackendCheck(r).join('\n'),
    /LoRA adapters only: lora_target q_proj,v_proj, rank 4, alpha 8, 11,264 trainable parameters/,
  );
  const bad = check(['--backend', 'wasm', ...SMALL, '--lora-target', 'qkv']);
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /actor_train\.model_args\.lora_target.*"qkv" names no linear layer of the decoder/);
  const rankOnly = check(['--backend', 'wasm', ...SMALL, '--lora-rank', '4']);
  assert.equal(rankOnly.code, 2);
  assert.match(rankOnly.stderr, /--lora-rank 4 without --lora-target/);
});

for (const v of NATIVE_VARIANTS) {
  const skip =
    inspectNativeBuild(v).state === 'installed'
      ? false
      : `no ${v.variant.toUpperCase()} build in ${nativeBuildDir(v)}; run ${installCommand(v)}`;
  test(`backend check on the native ${v.backend} backend`, { skip }, () => {
    checksOn(v.backend);
  });
}

test('backend check without --layers on a host without a GPU: a 2-layer slice of the 24, said on stderr', () => {
  const res = check(['--backend', 'wasm', ...SMALL.slice(2), '--rounds', '1', '--json']);
  assert.equal(res.code, 0, res.stderr);
  assert.equal((JSON.parse(res.stdout) as CheckResult).model.layers, 2);
  assert.match(res.stderr, /no GPU: checking 2 of Qwen2\.5-0\.5B's 24 layers \(--layers 24 for the whole model\)/);
});

test('backend check: bad sizes exit 2 naming the option, the value and what is allowed, before any backend loads', () => {
  const cases: Array<[string[], RegExp]> = [
    [['--layers', '0'], /--layers <n>.*'0' is invalid.*not an integer >= 1/],
    [['--length', '1'], /--length <n>.*'1' is invalid.*not an integer >= 2/],
    [['--rows', 'many'], /--rows <n>.*'many' is invalid.*not an integer >= 1/],
    [['--backend', 'tpu'], /--backend <name>.*'tpu' is invalid.*tensorflow-gpu, tensorflow, wasm, cpu/],
    [['--batch', '4', '--micro-batch', '3'], /--micro-batch 3 does not divide --batch 4; allowed: a divisor of the batch/],
    [['--gradient-checkpointing', 'yes'], /--gradient-checkpointing <on\|off>.*'yes' is invalid.*allowed: on, off/],
  ];
  for (const [args, message] of cases) {
    const res = check(['--backend', 'wasm', ...SMALL, ...args]); // the last value of an option wins
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, message);
    assert.doesNotMatch(res.stderr, /\[backend\] backend/, 'refused before a backend loaded');
  }
});
