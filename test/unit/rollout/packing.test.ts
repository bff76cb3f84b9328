import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appendTurn, emptyPacked, shiftedArrays } from '../../../src/rollout/packing';

test('appendTurn: ids are prompt ++ response per turn; mask and log-probs cover only the sampled tokens', () => {
  const packed = emptyPacked();
  appendTurn(packed, [10, 11], [12, 13], [-0.5, -0.25]);
  appendTurn(packed, [14], [15], [-1]);
  assert.deepEqual(packed, {
    inputIds: [10, 11, 12, 13, 14, 15],
    responseMask: [0, 0, 1, 1, 0, 1],
    sampleLogprobs: [0, 0, -0.5, -0.25, 0, -1],
  });
});

test('shiftedArrays: index t is about token t+1, padded to L-1; lastIndex is the last sampled token shifted', () => {
  const packed = emptyPacked();
  appendTurn(packed, [10, 11], [12, 13], [-0.5, -0.25]);
  appendTurn(packed, [14], [15], [-1]);
  const none = { inputIds: [1, 2, 3], responseMask: [0, 0, 0], sampleLogprobs: [0, 0, 0] };
  assert.deepEqual(shiftedArrays([packed, none], 8), {
    mask: [
      [0, 1, 1, 0, 1, 0, 0],
      [0, 0, 0, 0, 0, 0, 0],
    ],
    lastIndex: [4, -1],
    sampleLogprobs: [
      [0, -0.5, -0.25, 0, -1, 0, 0],
      [0, 0, 0, 0, 0, 0, 0],
    ],
  });
});

test('shiftedArrays: a sampled first token has no position before it, so it is not in the shifted mask', () => {
  const first = { inputIds: [7, 8], responseMask: [1, 1], sampleLogprobs: [-2, -3] };
  assert.deepEqual(shiftedArrays([first], 2), { mask: [[1]], lastIndex: [0], sampleLogprobs: [[-3]] });
});
