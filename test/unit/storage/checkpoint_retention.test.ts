/** Which checkpoints are full (save_steps) and which steps' data the store drops (max_ckpt_to_keep, async_generation_ratio). */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isFullCheckpoint, stepsToDrop } from '../../../src/storage/policy_checkpoint';

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

test('full checkpoints follow ROLL: after the update of step g > 0 with g % save_steps == 0, and after the last step', () => {
  const config = { save_steps: 10, max_steps: 30 };
  // checkpoint step n holds the update of pipeline step g = n - 1
  assert.deepEqual(
    range(1, 30).filter((n) => isFullCheckpoint(n, config)),
    [11, 21, 30],
  );
  assert.deepEqual(
    range(1, 5).filter((n) => isFullCheckpoint(n, { save_steps: 1, max_steps: 5 })),
    [2, 3, 4, 5],
  );
  assert.deepEqual(
    range(1, 4).filter((n) => isFullCheckpoint(n, { save_steps: 50, max_steps: 4 })),
    [4],
  );
});

test('max_ckpt_to_keep 0 keeps every full checkpoint, the newest and the one before; every other optimizer state goes', () => {
  const config = { save_steps: 10, max_steps: 30, max_ckpt_to_keep: 0, async_generation_ratio: 0 };
  assert.deepEqual(stepsToDrop(range(1, 25), 25, config), [...range(1, 10), ...range(12, 20), ...range(22, 23)]);
  assert.deepEqual(stepsToDrop([11, 21, 28, 29, 30], 30, config), [28]);
});

test('max_ckpt_to_keep k keeps the newest k full checkpoints, the newest step counting when it is one', () => {
  const config = { save_steps: 2, max_steps: 10, max_ckpt_to_keep: 2, async_generation_ratio: 0 };
  // full: 3, 5, 7, 9 (g = 2, 4, 6, 8) and 10 (the last)
  assert.deepEqual(stepsToDrop(range(1, 8), 8, config), [1, 2, 4, 6]);
  assert.deepEqual(stepsToDrop([3, 5, 7, 8, 9], 9, config), [3, 5]);
  assert.deepEqual(stepsToDrop([5, 7, 9, 10], 10, config), [5]);
});

test('the newest step, the one before (a damaged newest replays from it) and steps after it are never dropped', () => {
  const config = { save_steps: 100, max_steps: 200, max_ckpt_to_keep: 1, async_generation_ratio: 0 };
  assert.deepEqual(stepsToDrop([2, 3, 4, 5, 6, 7], 5, config), [2, 3]);
  assert.deepEqual(stepsToDrop([4, 5], 5, config), []);
});

test('with async_generation_ratio r the r steps before the one before the newest stay too (rollouts ahead read them)', () => {
  const config = { save_steps: 100, max_steps: 200, max_ckpt_to_keep: 1, async_generation_ratio: 2 };
  assert.deepEqual(stepsToDrop([2, 3, 4, 5, 6, 7], 7, config), [2, 3]);
  assert.deepEqual(stepsToDrop([4, 5, 6, 7], 7, config), []);
});

test('step 0, the reference policy, is never dropped', () => {
  const config = { save_steps: 100, max_steps: 200, max_ckpt_to_keep: 1, async_generation_ratio: 0 };
  assert.deepEqual(stepsToDrop([0, 1, 2, 3], 3, config), [1]);
});
