import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deriveSeed, Rng } from '../../../src/util/rng';

test('same parts give the same stream, different parts a different one', () => {
  const a = new Rng(42, 'train', 3, 7);
  const b = new Rng(42, 'train', 3, 7);
  const c = new Rng(42, 'train', 3, 8);
  const xs = Array.from({ length: 5 }, () => a.nextUint32());
  assert.deepEqual(
    Array.from({ length: 5 }, () => b.nextUint32()),
    xs,
  );
  assert.notDeepEqual(
    Array.from({ length: 5 }, () => c.nextUint32()),
    xs,
  );
  assert.equal(deriveSeed(1, 'val'), deriveSeed(1, 'val'));
  assert.notEqual(deriveSeed(1, 'val'), deriveSeed(1, 'train'));
});

test('int and next stay in range; uniform mean is near 0.5', () => {
  const r = new Rng(9);
  let sum = 0;
  for (let i = 0; i < 20000; i++) {
    const x = r.next();
    assert.ok(x >= 0 && x < 1);
    sum += x;
    const k = r.int(4);
    assert.ok(Number.isInteger(k) && k >= 0 && k < 4);
  }
  assert.ok(Math.abs(sum / 20000 - 0.5) < 0.02);
  assert.throws(() => r.int(0), /positive integer, got 0/);
});
