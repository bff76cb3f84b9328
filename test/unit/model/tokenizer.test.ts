import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tokenizerFromJSON } from '../../../src/model/hf/tokenizer';
import { charTokenizer } from '../../../src/model/tokenizer';

test('char tokenizer layout: specials first, 101 ids, eos = [im_end, endoftext]', () => {
  const tok = charTokenizer();
  assert.equal(tok.vocabSize, 101);
  assert.equal(tok.padId, 0);
  assert.deepEqual(tok.specialTokens, { '<|endoftext|>': 0, '<|im_start|>': 1, '<|im_end|>': 2, '<unk>': 3 });
  assert.deepEqual(tok.eosIds, [2, 0]);
  assert.deepEqual(tok.encode('\n A~'), [4, 5, 38, 99]);
  assert.deepEqual(tok.encode('√'), [100]);
});

test('round trip with ChatML special tokens; skipSpecial drops them', () => {
  const tok = charTokenizer();
  const text = '<|im_start|>user\nGo <answer>Left</answer> √_G<|im_end|>\n<|im_start|>assistant\n';
  const ids = tok.encode(text);
  assert.equal(ids[0], 1);
  assert.equal(ids.filter((i) => i === 2).length, 1);
  assert.equal(tok.decode(ids), text);
  assert.equal(tok.decode(ids, true), 'user\nGo <answer>Left</answer> √_G\nassistant\n');
});

test('unknown characters map to <unk>; bad ids throw RangeError', () => {
  const tok = charTokenizer();
  assert.deepEqual(tok.encode('é'), [3]);
  assert.throws(() => tok.decode([101]), RangeError);
});

test('toJSON / tokenizerFromJSON round trip; wrong type rejected', () => {
  const tok = charTokenizer();
  const json = JSON.parse(JSON.stringify(tok.toJSON()));
  const tok2 = tokenizerFromJSON(json);
  const s = '<|im_start|>hi √<|endoftext|>';
  assert.deepEqual(tok2.encode(s), tok.encode(s));
  assert.deepEqual(tok2.eosIds, tok.eosIds);
  assert.throws(() => tokenizerFromJSON({ type: 'BPE' }), /type = "BPE"/);
});
