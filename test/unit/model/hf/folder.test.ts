/**
 * HF model folders (model/hf/folder.ts, hf/tokenizer.ts): the char tokenizer as an
 * HF tokenizer.json encodes and decodes its alphabet exactly as starpo's; a checkpoint's files written
 * as an HF folder hold only starpo's config keys and load back (pretrain: DIR) with identical tensors;
 * an HF tokenizer's own files travel unchanged; bad folders are reported naming the file and key.
 */

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { generateReply } from '../../../../src/cli/generate';
import { tinyPreset } from '../../../../src/model/config';
import { hfFolderFiles, pretrainedIdentity, pretrainedProblems } from '../../../../src/model/hf/folder';
import { decodeSafetensors, encodeSafetensors } from '../../../../src/model/hf/safetensors';
import { charTokenizerHfJSON, hfTokenizer, tokenizerFromJSON } from '../../../../src/model/hf/tokenizer';
import { configToJSONBytes, modelFromFolder, modelToSafetensors } from '../../../../src/model/hf/weights';
import { Qwen2 } from '../../../../src/model/qwen2';
import { CHATML_TEMPLATE, type CharTokenizerJSON, type ChatMessage, charTokenizer } from '../../../../src/model/tokenizer';
import { initTestBackend } from '../../../helpers/backend';
import { tinyExportFiles } from '../../../helpers/tiny_export';

const TEXTS = [
  '<|im_start|>system\nYou are a helpful agent.<|im_end|>\n<|im_start|>user\nFrozenLake: reach G.\nTurn 1:\nP_G\n__#√\nAlways output: <answer> [your answer] </answer><|im_end|>\n<|im_start|>assistant\n',
  '<answer>Right</answer><|im_end|>\n<|im_start|>user\nTurn 2: ok<|im_end|>\n<|im_start|>assistant\n',
  "<|endoftext|> and <|im_end|><|im_end|> are single ids; it's 'S' 12 \\ {} ~",
  '',
  ' ',
  '\n\n',
  'a  b   c',
  '√√#√ \n \n\n  x',
];

test('the char tokenizer as an HF tokenizer.json encodes and decodes like starpo, specials included; unknown characters are dropped', () => {
  const char = charTokenizer();
  const hf = hfTokenizer(JSON.parse(JSON.stringify(charTokenizerHfJSON(char.toJSON() as CharTokenizerJSON))));
  assert.equal(hf.vocabSize, char.vocabSize);
  assert.equal(hf.padId, char.padId);
  assert.deepEqual(hf.eosIds, char.eosIds);
  assert.deepEqual(hf.specialTokens, char.specialTokens);
  for (const text of TEXTS) {
    const ids = char.encode(text);
    assert.deepEqual(hf.encode(text), ids, JSON.stringify(text));
    assert.equal(hf.decode(ids), char.decode(ids));
    assert.equal(hf.decode(ids, true), char.decode(ids, true));
  }
  assert.equal(hf.decode([char.vocabSize]), '', 'an id past the vocabulary decodes as nothing, as in transformers');
  assert.throws(() => hf.decode([-1]), RangeError);
  // starpo's char tokenizer gives <unk>; the byte-level pipeline transformers 5 imposes finds no entry
  const unknown = 'é, ü\tand 中!';
  assert.equal(char.encode(unknown).filter((id) => id === char.specialTokens['<unk>']).length, 4);
  assert.deepEqual(
    hf.encode(unknown),
    char.encode(unknown).filter((id) => id !== char.specialTokens['<unk>']),
  );
  // a checkpoint's tokenizer.json may hold either format
  assert.deepEqual(tokenizerFromJSON(hf.toJSON()).encode(TEXTS[0] as string), char.encode(TEXTS[0] as string));
});

test('an HF tokenizer.json without the ChatML tokens is refused, naming them', () => {
  const json = charTokenizerHfJSON(charTokenizer().toJSON() as CharTokenizerJSON);
  const without = {
    ...json,
    added_tokens: json.added_tokens.filter((t) => t.content !== '<|im_start|>'),
    model: {
      ...json.model,
      vocab: Object.fromEntries(Object.entries(json.model.vocab as Record<string, number>).filter(([k]) => k !== '<|im_start|>')),
    },
  };
  assert.throws(() => hfTokenizer(without), /"<\|im_start\|>" missing/);
});

/** A tiny model's checkpoint files as saveCheckpoint writes them. */
async function checkpointFiles(seed = 3): Promise<{ files: Record<string, Uint8Array>; model: Qwen2 }> {
  const tokenizer = charTokenizer();
  const model = Qwen2.random(tinyPreset(tokenizer.vocabSize), seed);
  return {
    model,
    files: {
      'model.safetensors': await modelToSafetensors(model),
      'config.json': configToJSONBytes(model.config),
      'tokenizer.json': new TextEncoder().encode(JSON.stringify(tokenizer.toJSON())),
    },
  };
}

function writeFolder(files: Record<string, Uint8Array>): string {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-hf-'));
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dir, name), bytes);
  return dir;
}

const readJSON = (dir: string, name: string) => JSON.parse(readFileSync(join(dir, name), 'utf8'));

test('a checkpoint written as an HF folder has HF config keys and tokenizer files and loads back with identical tensors', async () => {
  const { files, model } = await checkpointFiles();
  const dir = writeFolder(
    hfFolderFiles(files, {
      max_new_tokens: 24,
      temperature: 0.95,
      top_p: 0.7,
      top_k: 50,
      do_sample: true,
      num_beams: 1,
      num_return_sequences: 1,
    }),
  );
  try {
    const config = readJSON(dir, 'config.json');
    assert.deepEqual(config.architectures, ['Qwen2ForCausalLM']);
    assert.equal(config.model_type, 'qwen2');
    assert.equal(config.dtype, 'float32');
    assert.equal(config.hidden_act, 'silu');
    assert.equal(config.tie_word_embeddings, true);
    for (const k of [
      'vocab_size',
      'hidden_size',
      'intermediate_size',
      'num_hidden_layers',
      'num_attention_heads',
      'num_key_value_heads',
      'max_position_embeddings',
      'rope_theta',
      'rms_norm_eps',
    ]) {
      assert.equal(config[k], model.config[k], k);
    }
    assert.deepEqual([config.bos_token_id, config.eos_token_id], [0, 2]);
    const tokConfig = readJSON(dir, 'tokenizer_config.json');
    assert.equal(tokConfig.tokenizer_class, 'PreTrainedTokenizerFast');
    assert.equal(tokConfig.eos_token, '<|im_end|>');
    assert.equal(tokConfig.pad_token, '<|endoftext|>');
    assert.equal(tokConfig.chat_template, CHATML_TEMPLATE);
    const decoder = tokConfig.added_tokens_decoder as Record<string, { content: string; special: boolean }>;
    assert.equal(
      Object.keys(decoder).length,
      charTokenizer().vocabSize,
      'every character is an added token (transformers 5 keeps them from here)',
    );
    assert.deepEqual(
      [decoder['1'], decoder['5']].map((t) => [t.content, t.special]),
      [
        ['<|im_start|>', true],
        [' ', false],
      ],
    );
    assert.deepEqual(readJSON(dir, 'special_tokens_map.json').additional_special_tokens, ['<|im_start|>']);
    assert.deepEqual(readJSON(dir, 'generation_config.json'), {
      bos_token_id: 0,
      eos_token_id: [2, 0],
      pad_token_id: 0,
      do_sample: true,
      temperature: 0.95,
      top_p: 0.7,
      top_k: 50,
      max_new_tokens: 24,
    });
    assert.equal(readJSON(dir, 'tokenizer.json').model.type, 'BPE');
    assert.deepEqual(
      readFileSync(join(dir, 'model.safetensors')),
      Buffer.from(files['model.safetensors'] as Uint8Array),
      'weights copied byte for byte',
    );

    assert.deepEqual(pretrainedProblems(dir, 400), []);
    const loaded = modelFromFolder(dir);
    try {
      assert.deepEqual(await modelToSafetensors(loaded.model), files['model.safetensors'], 'the same tensors, names and bytes');
      assert.deepEqual(loaded.tokenizer.encode(TEXTS[0] as string), charTokenizer().encode(TEXTS[0] as string));
    } finally {
      loaded.model.dispose();
    }
    assert.deepEqual(Object.keys(pretrainedIdentity(dir)).sort(), [
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
  } finally {
    model.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** The keys of config.json starpo writes: those of the model it computes, nothing copied from a source. */
const CONFIG_KEYS = [
  'architectures',
  'attention_dropout',
  'bos_token_id',
  'dtype',
  'eos_token_id',
  'hidden_act',
  'hidden_size',
  'intermediate_size',
  'max_position_embeddings',
  'model_type',
  'num_attention_heads',
  'num_hidden_layers',
  'num_key_value_heads',
  'rms_norm_eps',
  'rope_theta',
  'tie_word_embeddings',
  'use_sliding_window',
  'vocab_size',
];

test("config.json holds only starpo's keys: a source's dtype, second rope spelling and window keys do not travel", async () => {
  const { files, model } = await checkpointFiles();
  model.dispose();
  // a Qwen2.5 config.json as transformers 5 re-saves it, as a checkpoint of a run from that folder keeps it
  const source = {
    ...JSON.parse(new TextDecoder().decode(files['config.json'])),
    rope_theta: 1000000,
    dtype: 'bfloat16',
    torch_dtype: 'bfloat16',
    rope_parameters: { rope_theta: 1000000, rope_type: 'default' },
    rope_scaling: null,
    use_sliding_window: false,
    sliding_window: 32768,
    max_window_layers: 21,
    layer_types: ['full_attention', 'full_attention'],
    transformers_version: '5.24.0',
    use_cache: true,
  };
  const config = JSON.parse(
    new TextDecoder().decode(hfFolderFiles({ ...files, 'config.json': new TextEncoder().encode(JSON.stringify(source)) })['config.json']),
  );
  assert.deepEqual(Object.keys(config).sort(), CONFIG_KEYS);
  assert.equal(config.dtype, 'float32');
  assert.equal(config.rope_theta, 1000000);
  assert.equal(config.use_sliding_window, false);
});

test("a checkpoint with an HF tokenizer exports the source's tokenizer files byte for byte and generation_config with its stop ids", async () => {
  const { files, model } = await checkpointFiles();
  model.dispose();
  const enc = (value: unknown) => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));
  const source = {
    'tokenizer.json': enc(charTokenizerHfJSON(charTokenizer().toJSON() as CharTokenizerJSON)),
    'tokenizer_config.json': enc({
      eos_token: '<|im_end|>',
      pad_token: '<|endoftext|>',
      tokenizer_class: 'Qwen2Tokenizer',
      chat_template: 'unused: chat_template.jinja wins',
    }),
    'chat_template.jinja': enc(
      "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
    ),
    'generation_config.json': enc({ eos_token_id: [2], repetition_penalty: 1.05, temperature: 0.7 }),
  };
  const out = hfFolderFiles(
    { ...files, ...source },
    { max_new_tokens: 8, temperature: 0, top_p: 1, top_k: 0, do_sample: true, num_beams: 1, num_return_sequences: 1 },
  );
  assert.deepEqual(Object.keys(out).sort(), [
    'chat_template.jinja',
    'config.json',
    'generation_config.json',
    'model.safetensors',
    'tokenizer.json',
    'tokenizer_config.json',
  ]);
  for (const name of ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja'] as const)
    assert.deepEqual(out[name], source[name], name);
  // the stop ids of the source's generation_config; temperature 0 decodes greedily in starpo, so no sampling keys
  assert.deepEqual(JSON.parse(new TextDecoder().decode(out['generation_config.json'])), {
    bos_token_id: 0,
    eos_token_id: [2],
    pad_token_id: 0,
    max_new_tokens: 8,
    do_sample: false,
  });
  assert.equal(JSON.parse(new TextDecoder().decode(out['config.json'])).eos_token_id, 2);
});

/** test/fixtures/hf/export_fixtures.py's record of what transformers 4 and 5 make of the tiny export. */
interface TinyExportFixture {
  files_sha256: Record<string, string>;
  texts: string[];
  chats: ChatMessage[][];
  max_new_tokens: number;
  transformers: Record<
    string,
    {
      tokenizer: string;
      dtype: string;
      texts: Array<{ ids: number[]; decode: string }>;
      chats: Array<{ text: string; ids: number[]; greedy: number[]; logprobs: number[] }>;
    }
  >;
}

test('transformers 4 and 5 read the tiny export as starpo does: ids, decodes, chat prompts, greedy tokens and log-probs', async () => {
  const fixture = JSON.parse(readFileSync('test/fixtures/hf/tiny_export.json', 'utf8')) as TinyExportFixture;
  const files = tinyExportFiles();
  const hashes = Object.fromEntries(Object.entries(files).map(([name, bytes]) => [name, createHash('sha256').update(bytes).digest('hex')]));
  assert.deepEqual(
    hashes,
    fixture.files_sha256,
    'the folder transformers read is the one starpo exports (else re-run test/fixtures/hf/export_fixtures.py)',
  );
  assert.deepEqual(
    Object.keys(fixture.transformers)
      .map((v) => v.split('.')[0])
      .sort(),
    ['4', '5'],
  );
  await initTestBackend();
  const dir = writeFolder(files);
  const loaded = modelFromFolder(dir);
  const char = charTokenizer();
  const alphabet = new Set((char.toJSON() as CharTokenizerJSON).chars);
  const inAlphabet = (text: string) =>
    [...Object.keys(char.specialTokens).reduce((t, s) => t.split(s).join(''), text)].every((c) => alphabet.has(c));
  try {
    for (const [version, hf] of Object.entries(fixture.transformers)) {
      assert.equal(hf.dtype, 'float32', version);
      fixture.texts.forEach((text, i) => {
        const { ids, decode } = hf.texts[i] as { ids: number[]; decode: string };
        const what = `transformers ${version}, ${JSON.stringify(text)}`;
        assert.deepEqual(loaded.tokenizer.encode(text), ids, `${what}: the exported tokenizer as starpo reads it`);
        assert.equal(loaded.tokenizer.decode(ids), decode, what);
        if (inAlphabet(text)) {
          assert.deepEqual(char.encode(text), ids, `${what}: starpo's char tokenizer`);
          assert.equal(decode, text, `${what}: decodes back`);
        }
      });
      assert.ok(
        fixture.texts.some((t) => !inAlphabet(t)),
        'a text outside the alphabet is recorded too',
      );
      fixture.chats.forEach((messages, i) => {
        const want = hf.chats[i] as TinyExportFixture['transformers'][string]['chats'][number];
        const what = `transformers ${version}, chat ${i}`;
        assert.equal(char.chat.render(messages, true), want.text, what);
        assert.deepEqual(char.encode(want.text), want.ids, what);
        const out = generateReply(
          { ...loaded, source: dir },
          messages,
          {
            max_new_tokens: fixture.max_new_tokens,
            temperature: 0,
            top_p: 1,
            top_k: 0,
            do_sample: false,
            num_beams: 1,
            num_return_sequences: 1,
          },
          0,
        );
        assert.deepEqual(out.prompt_ids, want.ids, what);
        assert.deepEqual(out.ids, want.greedy, `${what}: greedy tokens`);
        out.logprobs.forEach((lp, j) =>
          assert.ok(Math.abs(lp - (want.logprobs[j] as number)) < 1e-4, `${what}: log-prob ${j}: ${lp} vs ${want.logprobs[j]}`),
        );
      });
    }
  } finally {
    loaded.model.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('sharded weights (model.safetensors.index.json) load like a single file', async () => {
  const { files, model } = await checkpointFiles(5);
  const hf = hfFolderFiles(files);
  const { tensors } = decodeSafetensors(hf['model.safetensors'] as Uint8Array);
  const names = Object.keys(tensors).sort();
  const half = Math.ceil(names.length / 2);
  const shards = [names.slice(0, half), names.slice(half)];
  const shardFiles = shards.map((_, i) => `model-0000${i + 1}-of-00002.safetensors`);
  const { 'model.safetensors': _single, ...rest } = hf;
  const dir = writeFolder({
    ...rest,
    ...Object.fromEntries(
      shards.map((group, i) => [shardFiles[i], encodeSafetensors(Object.fromEntries(group.map((n) => [n, tensors[n]!])))]),
    ),
    'model.safetensors.index.json': new TextEncoder().encode(
      JSON.stringify({ weight_map: Object.fromEntries(shards.flatMap((group, i) => group.map((n) => [n, shardFiles[i]]))) }),
    ),
  });
  try {
    assert.deepEqual(pretrainedProblems(dir, 400), []);
    const loaded = modelFromFolder(dir);
    assert.deepEqual(await modelToSafetensors(loaded.model), files['model.safetensors']);
    loaded.model.dispose();
  } finally {
    model.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bad pretrained folders: every problem names the file and the key', async () => {
  const { files, model } = await checkpointFiles();
  model.dispose();
  const hf = hfFolderFiles(files);
  const edit = (name: string, patch: (j: Record<string, unknown>) => void) => {
    const j = JSON.parse(new TextDecoder().decode(hf[name]));
    patch(j);
    return { ...hf, [name]: new TextEncoder().encode(JSON.stringify(j)) };
  };
  const cases: Array<[string, Record<string, Uint8Array>, number, RegExp]> = [
    [
      'model_type',
      edit('config.json', (j) => (j.model_type = 'qwen3')),
      400,
      /config\.json: model_type = "qwen3" is not supported; allowed: 'qwen2', 'llama'/,
    ],
    ['hidden_act', edit('config.json', (j) => (j.hidden_act = 'gelu')), 400, /config\.json: hidden_act = "gelu" is not supported/],
    [
      'shapes',
      edit('config.json', (j) => (j.intermediate_size = 128)),
      400,
      /model\.safetensors: tensor model\.layers\.0\.mlp\.gate_proj\.weight has shape \[192,64\], .*config\.json needs \[128,64\]/,
    ],
    ['sequence_length', hf, 4096, /sequence_length 4096 is more than .*config\.json max_position_embeddings \(2048\)/],
    [
      'vocab',
      edit('config.json', (j) => (j.vocab_size = 50)),
      400,
      /tokenizer\.json has ids up to 100, more than .*config\.json vocab_size \(50\)/,
    ],
    [
      'tokenizer',
      {
        ...hf,
        'tokenizer.json': new TextEncoder().encode(
          '{"model": {"type": "BPE", "vocab": {}, "merges": []}, "added_tokens": [], "decoder": null, "normalizer": null, "pre_tokenizer": null, "post_processor": null}',
        ),
      },
      400,
      /tokenizer\.json: token\(s\) "<\|im_start\|>", "<\|im_end\|>", "<\|endoftext\|>" missing/,
    ],
    [
      'no weights',
      Object.fromEntries(Object.entries(hf).filter(([n]) => n !== 'model.safetensors')),
      400,
      /model\.safetensors does not exist/,
    ],
    ['no config', Object.fromEntries(Object.entries(hf).filter(([n]) => n !== 'config.json')), 400, /config\.json does not exist/],
    ['not JSON', { ...hf, 'config.json': new TextEncoder().encode('{oops') }, 400, /config\.json is not valid JSON/],
    [
      'truncated weights',
      { ...hf, 'model.safetensors': (hf['model.safetensors'] as Uint8Array).subarray(0, 20_000) },
      400,
      /model\.safetensors: tensor \S+ ends at data byte \d+ but the file has \d+ data bytes \(a truncated file\?\); allowed: a complete safetensors file/,
    ],
  ];
  for (const [name, folder, sequenceLength, expected] of cases) {
    const dir = writeFolder(folder);
    try {
      const problems = pretrainedProblems(dir, sequenceLength);
      assert.ok(
        problems.some((p) => expected.test(p) && p.includes(dir)),
        `${name}: ${JSON.stringify(problems)}`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const missing = join(tmpdir(), `starpo-no-such-folder-${process.pid}`);
  assert.match(
    pretrainedProblems(missing, 400)[0] ?? '',
    /is not a folder; allowed: the preset "tiny" or an HF Qwen2 or Llama model folder/,
  );
});
