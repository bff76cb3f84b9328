/** RAGEN-2's early stops as the training workflow counts them, step by step. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runInputFromFile } from '../../../src/cli/run_input';
import type { EarlyStopState, RunConfig } from '../../../src/contract';
import { checkEarlyStop, freshEarlyStop } from '../../../src/workflows/early_stop';

const config = (...overrides: string[]): RunConfig => runInputFromFile('test/fixtures/tiny_frozen_lake.yaml', 'es', overrides).input.config;

/** Feeds the steps' metrics in order; returns the step index that fired (or -1) and its verdict. */
function feed(cfg: RunConfig, steps: Array<Record<string, number>>) {
  let state: EarlyStopState = freshEarlyStop();
  for (const [i, m] of steps.entries()) {
    const v = checkEarlyStop(cfg, m, state);
    state = v.state;
    if (v.fired) return { at: i, fired: v.fired, state };
  }
  return { at: -1, fired: null, state };
}

test('rollout_filter_empty_stop_steps: that many steps in a row with no group kept stop the run; a kept group resets the count', () => {
  const empty = { 'rollout/filter_kept_count': 0 };
  const some = { 'rollout/filter_kept_count': 2 };
  const cfg = config('rollout_filter_empty_stop_steps=3');
  assert.equal(feed(cfg, [empty, empty, some, empty, empty]).at, -1);
  const out = feed(cfg, [empty, some, empty, empty, empty]);
  assert.equal(out.at, 4);
  assert.equal(out.fired?.metric, 'early_stopped/empty_filter');
  assert.match(out.fired?.reason ?? '', /kept no group for 3 steps in a row \(rollout_filter_empty_stop_steps 3\)/);
  assert.equal(feed(config('rollout_filter_empty_stop_steps=0'), Array(20).fill(empty)).at, -1, '0: never');
});

test('reward_variance_collapse: a full window of in-group std below fraction x the baseline mean stops the run', () => {
  const std = (v: number) => ({ 'rollout/in_group_std': v });
  const cfg = config(
    'early_stop.reward_variance_collapse.enabled=true',
    'early_stop.reward_variance_collapse.baseline_steps=2',
    'early_stop.reward_variance_collapse.window=3',
  );
  // baseline mean 0.5, floor 0.05: one value at the floor breaks the window
  assert.equal(feed(cfg, [std(0.4), std(0.6), std(0.01), std(0.05), std(0.01)]).at, -1);
  const out = feed(cfg, [std(0.4), std(0.6), std(0.01), std(0.02), std(0.049)]);
  assert.equal(out.at, 4);
  assert.equal(out.fired?.metric, 'early_stopped/reward_variance_collapse');
  assert.deepEqual(out.state.varianceWindow, [0.01, 0.02, 0.049]);
  const skipped = { 'rollout/in_group_std': 0, 'rollout/filter_kept_count': 0 };
  assert.equal(
    feed(cfg, [std(0.4), skipped, std(0.6), std(0.01), skipped, std(0.02), std(0.049)]).at,
    6,
    'steps that kept nothing count in neither',
  );
  const off = config('early_stop.reward_variance_collapse.baseline_steps=2', 'early_stop.reward_variance_collapse.window=3');
  assert.equal(feed(off, [std(0.4), std(0.6), std(0), std(0), std(0)]).at, -1, 'off by default');
});

test('low_validation_success: a tag below the threshold for a window of evaluations stops the run; steps without validation do not count', () => {
  const cfg = config('early_stop.low_validation_success.enabled=true', 'early_stop.low_validation_success.window=2');
  const val = (fl: number, soko: number) => ({
    'val/env/FrozenLake/success': fl,
    'val/env/Sokoban/success': soko,
    'val/env/success': (fl + soko) / 2,
  });
  const out = feed(cfg, [val(0.5, 0), { 'env/success': 0 }, val(0.6, 0.005)]);
  assert.equal(out.at, 2);
  assert.equal(out.fired?.metric, 'early_stopped/low_validation_success');
  assert.match(out.fired?.reason ?? '', /validation success of Sokoban stayed below 0.01 for 2 evaluations in a row/);
  assert.equal(feed(cfg, [val(0.5, 0), val(0.6, 0.02), val(0.6, 0)]).at, -1, 'a good evaluation resets the count');
});

test('a config stored before the early stops existed (a recorded history) never stops', () => {
  const old = config();
  const { early_stop: _, rollout_filter_empty_stop_steps: __, ...before } = old;
  assert.equal(
    feed(before as RunConfig, Array(30).fill({ 'rollout/filter_kept_count': 0, 'rollout/in_group_std': 0, 'val/env/X/success': 0 })).at,
    -1,
  );
});
