import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAction, stripSpecialTokens } from '../../../src/envs/env';

const LAKE = ['Left', 'Down', 'Right', 'Up'];

test('plain answer, case-insensitive, trimmed, canonical name returned', () => {
  assert.deepEqual(parseAction('<answer>Left</answer>', LAKE), { action: 'Left', answer: 'Left' });
  assert.equal(parseAction('<answer>left</answer>', LAKE).action, 'Left');
  assert.equal(parseAction('<answer>UP</answer>', LAKE).action, 'Up');
  assert.equal(parseAction('<answer>  Down \n</answer>', LAKE).action, 'Down');
  assert.equal(parseAction('I go <answer>Right</answer> now', LAKE).action, 'Right');
});

test('missing or malformed tags, non-actions and partial matches are invalid', () => {
  assert.deepEqual(parseAction('Left', LAKE), { action: null });
  assert.deepEqual(parseAction('<answer>Left', LAKE), { action: null });
  assert.deepEqual(parseAction('<answer></answer>', LAKE), { action: null, answer: '' });
  assert.equal(parseAction('<answer>Lef</answer>', LAKE).action, null);
  assert.equal(parseAction('<answer>Left Up</answer>', LAKE).action, null);
  assert.equal(parseAction('<answer>Jump</answer>', LAKE).action, null);
  assert.equal(parseAction('<Answer>Left</Answer>', LAKE).action, null);
  assert.equal(parseAction('', LAKE).action, null);
});

test('two answers: the first match wins, even when it is invalid', () => {
  assert.equal(parseAction('<answer>Up</answer><answer>Down</answer>', LAKE).action, 'Up');
  assert.equal(parseAction('<answer>Jump</answer><answer>Down</answer>', LAKE).action, null);
});

test('special tokens are stripped before matching', () => {
  assert.equal(stripSpecialTokens('a<|im_end|>b<|endoftext|>c<|im_start|>d<|im_end|>'), 'abcd');
  assert.equal(parseAction('<answer>Right</answer><|im_end|>', LAKE).action, 'Right');
  assert.equal(parseAction('<answer>Ri<|im_end|>ght</answer>', LAKE).action, 'Right');
  assert.equal(parseAction('<|im_start|><answer><|endoftext|>Up</answer>', LAKE).action, 'Up');
});

test('think pattern: requires <think>..</think> then <answer>..</answer>, multi-line allowed', () => {
  const think = { enableThink: true };
  assert.deepEqual(parseAction('<think>hole right</think> <answer>down</answer>', LAKE, think), {
    action: 'Down',
    answer: 'down',
    think: 'hole right',
  });
  assert.deepEqual(parseAction('<think>\nline1\nline2\n</think>\n<answer>Up</answer><|im_end|>', LAKE, think), {
    action: 'Up',
    answer: 'Up',
    think: 'line1\nline2',
  });
  assert.deepEqual(parseAction('<answer>Up</answer>', LAKE, think), { action: null });
  assert.deepEqual(parseAction('<think>x</think> text <answer>Up</answer>', LAKE, think), { action: null });
  // without the think option a think block is just ignored text
  assert.equal(parseAction('<think>x</think><answer>Up</answer>', LAKE).action, 'Up');
});

test('bandit arm names', () => {
  assert.equal(parseAction('<answer> Dragon </answer>', ['phoenix', 'dragon']).action, 'dragon');
});
