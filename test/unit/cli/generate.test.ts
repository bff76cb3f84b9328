/**
 * `starpo generate` (src/cli/generate.ts) through `node bin/starpo.js` as users run it, against the
 * model itself: the greedy reply is the argmax of a full forward pass at every step (no KV cache), the
 * --json log-probs are that pass's log-softmax, --score gives the same log-probs for the same reply,
 * the prompt is the model's chat template render; for the tiny preset and for an HF folder made by
 * transformers (test/helpers/hf_models.ts). Bad folders are refused as `config check` refuses them
 * (exit 2, every problem naming the file); bad flags, chats and chats the template refuses exit 2.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import type { GenerateOutput } from '../../../src/cli/generate';
import { tinyPreset } from '../../../src/model/config';
import { pretrainedProblems } from '../../../src/model/hf/folder';
import { modelFromFolder } from '../../../src/model/hf/weights';
import { Qwen2 } from '../../../src/model/qwen2';
import { CHATML_TEMPLATE, type ChatTokenizer, charTokenizer } from '../../../src/model/tokenizer';
import { deriveSeed } from '../../../src/util/rng';
import { initTestBackend, TEST_BACKEND_NAME } from '../../helpers/backend';
import { materializeHfVariant, removeHfFolder } from '../../helpers/hf_models';
import { writeTinyExport } from '../../helpers/tiny_export';

/**
 * What loading a native backend prints before generate's own output: TensorFlow's start-up notices (the
 * oneDNN and CPU-feature lines, printed before any log level applies) and, for the GPU build on a host
 * without a GPU, starpo's one-line notice that it computes on CPU.
 */
const BACKEND_NOTICE =
  /^(tensorflow-gpu: TensorFlow \S+ sees no GPU .*|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR|[IWE]\d{4} [\d:.]+ +\d+ \w+\.cc:\d+\] .*|To enable the following instructions: .*)\n/gm;

/** `starpo generate <args>` on this process's backend: exit code, stdout, stderr (the backend's load notices left out). */
function generate(args: string[], input?: string): { code: number | null; stdout: string; stderr: string } {
  const env = { ...process.env, STARPO_BACKEND: TEST_BACKEND_NAME };
  const res = spawnSync(process.execPath, ['bin/starpo.js', 'generate', ...args], { encoding: 'utf8', timeout: 120_000, input, env });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr.replace(BACKEND_NOTICE, '') };
}

function generateJSON(args: string[], input?: string): GenerateOutput {
  const res = generate([...args, '--json'], input);
  assert.equal(res.code, 0, res.stderr);
  return JSON.parse(res.stdout) as GenerateOutput;
}

/** log-softmax rows of one full forward pass over `ids` (float64 on the host). */
function logSoftmaxRows(model: Qwen2, ids: number[]): number[][] {
  const input = tf.tensor2d([ids], [1, ids.length], 'int32');
  const mask = tf.ones([1, ids.length]) as tf.Tensor2D;
  const logits = model.forward(input, mask);
  const data = logits.dataSync();
  tf.dispose([input, mask, logits]);
  const V = model.config.vocab_size;
  return ids.map((_, t) => {
    const row = Array.from(data.subarray(t * V, (t + 1) * V));
    const m = row.reduce((a, b) => Math.max(a, b), -Infinity);
    const lse = m + Math.log(row.reduce((s, x) => s + Math.exp(x - m), 0));
    return row.map((x) => x - lse);
  });
}

const argmax = (row: number[]) => row.reduce((best, x, i) => (x > (row[best] as number) ? i : best), 0);

/** Checks a greedy --json output against the model: prompt render, argmax path, log-probs, text. */
function checkGreedy(out: GenerateOutput, model: Qwen2, tokenizer: ChatTokenizer, maxNewTokens: number): void {
  assert.equal(out.prompt, tokenizer.chat.render(out.messages, true));
  assert.deepEqual(out.prompt_ids, tokenizer.encode(out.prompt));
  assert.equal(out.text, tokenizer.decode(out.ids));
  assert.equal(out.logprobs.length, out.ids.length);
  assert.ok(out.ids.length >= 1 && out.ids.length <= maxNewTokens);
  assert.equal(out.stopped, tokenizer.eosIds.includes(out.ids[out.ids.length - 1] as number));
  if (!out.stopped) assert.equal(out.ids.length, maxNewTokens);
  const rows = logSoftmaxRows(model, [...out.prompt_ids, ...out.ids]);
  out.ids.forEach((id, i) => {
    const row = rows[out.prompt_ids.length - 1 + i] as number[];
    assert.equal(id, argmax(row), `token ${i} is the argmax of the full forward pass`);
    assert.ok(Math.abs((out.logprobs[i] as number) - (row[id] as number)) < 1e-4, `log-prob ${i}: ${out.logprobs[i]} vs ${row[id]}`);
  });
}

test("tiny preset: the greedy reply is the model's argmax path, --json fields agree, --score gives the same log-probs", async () => {
  await initTestBackend();
  const tokenizer = charTokenizer();
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), deriveSeed(7, 'init'));
  try {
    const chat = [
      { role: 'system', content: 'You are a helpful agent.' },
      { role: 'user', content: 'Turn 1:\nP_G\n__#√' },
    ];
    const out = generateJSON(
      ['--model', 'tiny', '--seed', '7', '--chat', '-', '--no-do-sample', '--max-new-tokens', '12'],
      JSON.stringify(chat),
    );
    assert.equal(out.mode, 'generate');
    assert.deepEqual(out.messages, chat);
    assert.equal(
      out.prompt,
      '<|im_start|>system\nYou are a helpful agent.<|im_end|>\n<|im_start|>user\nTurn 1:\nP_G\n__#√<|im_end|>\n<|im_start|>assistant\n',
    );
    assert.equal(out.generating_args?.do_sample, false);
    checkGreedy(out, model, tokenizer, 12);

    // the reply's text scored after the same prompt: its ids and log-probs again
    const scored = generateJSON(['--model', 'tiny', '--seed', '7', '--chat', '-', '--score', out.text], JSON.stringify(chat));
    assert.equal(scored.mode, 'score');
    assert.deepEqual(scored.prompt_ids, out.prompt_ids);
    assert.deepEqual(scored.ids, out.ids);
    scored.logprobs.forEach((lp, i) => assert.ok(Math.abs(lp - (out.logprobs[i] as number)) < 1e-4, `score ${i}`));

    // text output: the reply without special tokens; score: one line per token and the sum
    const text = generate(['--model', 'tiny', '--seed', '7', '--prompt', 'Hi', '--score', 'ok<|im_end|>']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stderr, /^tiny is a preset with random weights, so its text is noise; for a trained model: --run <runId>/m);
    const lines = text.stdout.trim().split('\n');
    assert.equal(lines.length, 4);
    assert.match(lines[2] as string, /^-\d+\.\d{6}\t2\t"<\|im_end\|>"$/);
    const sum = lines.slice(0, 3).reduce((s, l) => s + Number(l.split('\t')[0]), 0);
    assert.ok(Math.abs(sum - Number((lines[3] as string).split('\t')[0])) < 1e-5);
    assert.match(lines[3] as string, /\ttotal \(3 tokens\)$/);
  } finally {
    model.dispose();
  }
});

test("sampling follows --seed: the same seed gives the same reply, the run's generating_args keys as flags", () => {
  const args = [
    '--model',
    'tiny',
    '--prompt',
    'Go',
    '--do-sample',
    '--temperature',
    '1.5',
    '--top-p',
    '1',
    '--top-k',
    '0',
    '--max-new-tokens',
    '16',
  ];
  const a = generateJSON([...args, '--seed', '3']);
  const b = generateJSON([...args, '--seed', '3']);
  assert.deepEqual(a.ids, b.ids);
  assert.deepEqual(a.generating_args, {
    max_new_tokens: 16,
    temperature: 1.5,
    top_p: 1,
    top_k: 0,
    do_sample: true,
    num_beams: 1,
    num_return_sequences: 1,
  });
  assert.ok(a.ids.length <= 16);
  assert.notDeepEqual(generateJSON([...args, '--seed', '4']).ids, a.ids, 'another seed, another draw');
});

test('an HF folder made by transformers (the real Qwen2.5 tokenizer): greedy reply and log-probs from the model, prompt from its own chat template', async () => {
  await initTestBackend();
  const dir = materializeHfVariant('tied_gqa');
  const { model, tokenizer } = modelFromFolder(dir);
  try {
    const out = generateJSON(['--model', dir, '--prompt', 'FrozenLake: reach G.', '--no-do-sample', '--max-new-tokens', '6']);
    assert.match(
      out.prompt,
      /^<\|im_start\|>system\nYou are Qwen, created by Alibaba Cloud\. You are a helpful assistant\.<\|im_end\|>\n/,
      "Qwen2.5's default system prompt",
    );
    checkGreedy(out, model, tokenizer, 6);
  } finally {
    model.dispose();
    removeHfFolder(dir);
  }
});

test('a bad folder is refused as config check refuses it: exit 2, every problem naming the file, before any model is built', () => {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-generate-'));
  try {
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ model_type: 'qwen3', vocab_size: 10 }));
    const res = generate(['--model', dir, '--prompt', 'Hi']);
    assert.equal(res.code, 2);
    const problems = pretrainedProblems(dir, 1);
    assert.ok(problems.length >= 2, JSON.stringify(problems));
    assert.equal(res.stderr, `error: --model ${dir}: not a model starpo can load\n${problems.map((p) => `  - ${p}\n`).join('')}`);
    assert.match(res.stderr, new RegExp(`${join(dir, 'config.json')}: model_type = "qwen3"`));
    assert.match(res.stderr, new RegExp(`${join(dir, 'tokenizer.json')} does not exist`));
    assert.equal(res.stdout, '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a chat the model's template refuses (raise_exception) exits 2 with the template's message", () => {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-generate-'));
  try {
    writeTinyExport(dir);
    writeFileSync(
      join(dir, 'chat_template.jinja'),
      `{% if messages[0]['role'] == 'assistant' %}{{ raise_exception('the first message cannot be the assistant') }}{% endif %}${CHATML_TEMPLATE}`,
    );
    const res = generate(['--model', dir, '--chat', '-'], '[{"role": "assistant", "content": "x"}]');
    assert.equal(res.code, 2, res.stderr);
    assert.match(res.stderr, /^error: the model's chat template refuses these messages: .*the first message cannot be the assistant/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a prompt longer than an active sliding window exits 2 naming the window, as config check refuses it against sequence_length', () => {
  const dir = materializeHfVariant('tied_gqa');
  try {
    const configFile = join(dir, 'config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        ...JSON.parse(readFileSync(configFile, 'utf8')),
        use_sliding_window: true,
        sliding_window: 16,
        layer_types: undefined,
        max_window_layers: 1,
      }),
    );
    const res = generate(['--model', dir, '--prompt', 'hi', '--max-new-tokens', '5']);
    assert.equal(res.code, 2, res.stderr);
    assert.match(
      res.stderr,
      /^error: the prompt's \d+ tokens \+ --max-new-tokens 5 are more than the model's active sliding_window \(16; use_sliding_window true, layer 1 >= max_window_layers = 1\); sliding-window attention is not implemented\n$/,
    );
  } finally {
    removeHfFolder(dir);
  }
});

test('bad arguments exit 2 naming the flag or the chat entry', () => {
  const cases: Array<[string[], RegExp, string?]> = [
    [['--prompt', 'Hi'], /^error: give either --model DIR\|tiny or --run <runId> \[--step N\]\n$/],
    [['--model', 'tiny'], /^error: give either --prompt TEXT or --chat FILE/],
    [['--model', 'tiny', '--prompt', 'a', '--chat', '-'], /^error: give either --prompt TEXT or --chat FILE/, '[]'],
    [
      ['--model', 'tiny', '--chat', '-'],
      /^error: --chat - \(stdin\): entry 1 is \{"role":"robot","content":"x"\}; allowed: \{role: system\|user\|assistant, content: a string\}\n$/,
      '[{"role":"user","content":"a"},{"role":"robot","content":"x"}]',
    ],
    [['--model', 'tiny', '--chat', '-'], /^error: --chat - \(stdin\): .*JSON.*; allowed: a JSON list of \{role, content\}\n$/, 'not json'],
    [
      ['--model', 'tiny', '--prompt', 'a', '--top-p', '2'],
      /option '--top-p <p>' argument '2' is invalid\. "2" is not a number in \(0, 1\]/,
    ],
    [['--model', 'tiny', '--prompt', 'a', '--step', '3'], /^error: --step 3: only with --run <runId>\n$/],
    [
      ['--model', 'tiny', '--prompt', 'a', '--max-new-tokens', '2040'],
      /^error: the prompt's 20 tokens \+ --max-new-tokens 2040 are more than the model's max_position_embeddings \(2048\)\n$/,
    ],
    [['--model', 'tiny', '--prompt', 'a', '--score', ''], /^error: --score: the text has no tokens\n$/],
    [['--run', '../x', '--prompt', 'a'], /option '--run <runId>' argument '\.\.\/x' is invalid/],
  ];
  for (const [args, expected, input] of cases) {
    const res = generate(args, input);
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, expected, args.join(' '));
  }
});
