import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { lengthBucketedMicroBatches, packBatch } from '../../../src/algo/batch';
import type { Trajectory } from '../../../src/contract';
import { charTokenizer } from '../../../src/model/tokenizer';
import { initTestBackend } from '../../helpers/backend';

const tokenizer = charTokenizer();

before(async () => {
  await initTestBackend();
});

function traj(ids: number[], mask: number[], score: number, group: string): Trajectory {
  return {
    trajGroupId: group,
    trajId: `${group}_0`,
    tag: 'T',
    groupId: 0,
    envId: 0,
    seed: 1,
    split: 'train',
    step: 0,
    inputIds: ids,
    responseMask: mask,
    sampleLogprobs: mask.map((m) => (m ? -0.5 : 0)),
    turns: [],
    episodeScore: score,
    success: false,
    truncated: false,
  };
}

test('packBatch shifts the response mask and right-pads', () => {
  const b = packBatch([traj([5, 6, 7, 8], [0, 0, 1, 1], 1, 'g'), traj([5, 6, 7], [0, 1, 1], 0, 'g')], tokenizer.padId);
  assert.deepEqual(b.ids.arraySync(), [
    [5, 6, 7, 8],
    [5, 6, 7, tokenizer.padId],
  ]);
  assert.deepEqual(b.attentionMask.arraySync(), [
    [1, 1, 1, 1],
    [1, 1, 1, 0],
  ]);
  // shifted: index t is the log-prob of token t+1
  assert.deepEqual(b.mask, [
    [0, 1, 1],
    [1, 1, 0],
  ]);
  assert.deepEqual(b.lastIndex, [2, 1]);
  assert.deepEqual(b.sampleLogprobs, [
    [0, -0.5, -0.5],
    [-0.5, -0.5, 0],
  ]);
  b.ids.dispose();
  b.attentionMask.dispose();
});

test('length bucketing sorts by length and keeps every index once', () => {
  assert.deepEqual(lengthBucketedMicroBatches([0, 1, 2, 3], [9, 3, 7, 1], 2), [
    [3, 1],
    [2, 0],
  ]);
});
