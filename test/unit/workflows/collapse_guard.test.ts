import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkCollapse } from '../../../src/workflows/collapse_guard';

const guard = { enabled: true, min_in_group_std: 0.01, min_entropy: 0.05, patience: 2, action: 'stop' as const };

test('collapse_guard fires after `patience` consecutive steps with both signals below their floors', () => {
  const low = { 'rollout/in_group_std': 0.001, 'actor/entropy': 0.01 };
  const first = checkCollapse(guard, low, 0);
  assert.deepEqual(first, { streak: 1, fired: null });
  const second = checkCollapse(guard, low, first.streak);
  assert.equal(second.streak, 2);
  assert.match(
    second.fired!,
    /rollout\/in_group_std 0\.0010 < min_in_group_std 0\.01 and actor\/entropy 0\.0100 < min_entropy 0\.05 for 2 consecutive steps/,
  );
});

test('one signal above its floor resets the streak; a disabled guard counts but never fires', () => {
  assert.deepEqual(checkCollapse(guard, { 'rollout/in_group_std': 0.001, 'actor/entropy': 0.5 }, 5), { streak: 0, fired: null });
  assert.deepEqual(checkCollapse(guard, { 'rollout/in_group_std': 0.2, 'actor/entropy': 0.01 }, 5), { streak: 0, fired: null });
  assert.deepEqual(checkCollapse({ ...guard, enabled: false }, { 'rollout/in_group_std': 0, 'actor/entropy': 0 }, 5), {
    streak: 6,
    fired: null,
  });
});

test('a skipped update (no entropy measured) with flat groups counts as collapsed', () => {
  const v = checkCollapse(guard, { 'rollout/in_group_std': 0 }, 1);
  assert.equal(v.streak, 2);
  assert.match(v.fired!, /actor\/entropy not measured \(update skipped\)/);
});
