/** RAGEN-2's group selection against the groups RAGEN's own rollout filter keeps (test/fixtures/ragen/filter_cases.json). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { filterGroups } from '../../../src/algo/filter';
import { filterLossScale, selectGroups } from '../../../src/algo/filter_strategies';
import type { FilterStrategy, TopPProbMode } from '../../../src/contract';

interface Case {
  scores: number[];
  strategy: FilterStrategy;
  value: number;
  type: 'largest' | 'smallest';
  includeZero: boolean;
  topPProbMode: TopPProbMode;
  selectionEps: number;
  selected: number[];
}
const fixture = JSON.parse(readFileSync('test/fixtures/ragen/filter_cases.json', 'utf8')) as { ragen: string; cases: Case[] };

test(`every strategy, type, top-p mode and include_zero keeps the groups RAGEN keeps (${fixture.ragen})`, () => {
  assert.ok(fixture.cases.length >= 500);
  const strategies = new Set(fixture.cases.map((c) => `${c.strategy}/${c.topPProbMode}`));
  assert.deepEqual([...strategies].sort(), ['min_p/linear', 'top_k/linear', 'top_k_abs/linear', 'top_p/linear', 'top_p/softmax']);
  assert.ok(
    fixture.cases.some((c) => c.selected.length === 0),
    'the fixture has cases that keep nothing',
  );
  for (const c of fixture.cases) {
    const got = selectGroups(c.scores, { ...c, largest: c.type === 'largest' }).sort((a, b) => a - b);
    assert.deepEqual(got, c.selected, JSON.stringify({ ...c, got }));
  }
});

test('filterGroups with a strategy: whole groups kept, RAGEN-2 metric names, a skip reason when nothing is kept', () => {
  // Groups a (std 0.7071), b (0), c (1.4142), d (0): trajectories interleaved as in filter.test.ts.
  const scores = [1, 5, 3, 2, 0, 5, 1, 2];
  const groupKeys = scores.map((_, i) => 'abcd'[i % 4]);
  const strategy = { strategy: 'top_k_abs' as const, value: 1, includeZero: false, topPProbMode: 'linear' as const, selectionEps: 0.01 };
  const out = filterGroups({ scores, groupKeys, type: 'largest', ratio: 1, strategy });
  assert.deepEqual(out.keep, [2, 6], 'group c, the highest std');
  assert.equal(out.metrics['rollout/filter_kept_count'], 1);
  assert.equal(out.metrics['rollout/filter_kept_ratio'], 0.25);
  assert.equal(out.metrics['rollout/filter_zero_count'], 2);
  const none = filterGroups({ scores: [1, 1, 2, 2], groupKeys: ['a', 'a', 'b', 'b'], type: 'std', ratio: 1, strategy });
  assert.deepEqual(none.keep, []);
  assert.match(
    none.skipReason ?? '',
    /rollout_filter_strategy top_k_abs 1 \(largest, include_zero false\) kept none of the 2 groups \(2 with zero reward variance\)/,
  );
});

test('filter_loss_scaling: none 1, linear the kept ratio, sqrt its square root', () => {
  assert.equal(filterLossScale('none', 0.25), 1);
  assert.equal(filterLossScale('linear', 0.25), 0.25);
  assert.equal(filterLossScale('sqrt', 0.25), 0.5);
});
