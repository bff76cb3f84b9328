/**
 * Rollout metrics: per-trajectory means, validation's {tag}/score and score over per-group mean
 * episode scores (ROLL agentic_pipeline.py val()), and the pool's event totals summed over shards.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Trajectory } from '../../../src/contract';
import { meanMetrics, mergeSums, sumMetrics } from '../../../src/rollout/metrics';

/** A trajectory with only what the metrics read. */
function traj(tag: string, group: number, score: number, success: boolean): Trajectory {
  return {
    trajGroupId: `${tag}_${group}_0_1`,
    trajId: '',
    tag,
    groupId: group,
    envId: 0,
    seed: 1,
    split: 'val',
    step: 0,
    inputIds: [1, 2, 3],
    responseMask: [0, 1, 1],
    sampleLogprobs: [0, 0, 0],
    episodeScore: score,
    success,
    truncated: false,
    turns: [{ observation: '', response: '', action: 'Left', reward: score, actionIsValid: true, actionIsEffective: false }],
  };
}

test('val/{tag}/score and val/score are means over groups of the per-group mean episode score', () => {
  // Lake: group 0 scores (1, 0, 0, 0) -> 0.25; group 1 (1, 1, 1, 1) -> 1. Box: group 2 (10.5, -1) -> 4.75
  const shardA = sumMetrics(
    [
      traj('Lake', 0, 1, true),
      traj('Lake', 0, 0, false),
      traj('Lake', 0, 0, false),
      traj('Lake', 0, 0, false),
      traj('Box', 2, 10.5, true),
      traj('Box', 2, -1, false),
    ],
    { groupScores: true, totals: { 'env/failed_episodes': 2, 'env/dropped_groups': 0 } },
  );
  const shardB = sumMetrics(
    [1, 1, 1, 1].map(() => traj('Lake', 1, 1, true)),
    { groupScores: true, totals: { 'env/failed_episodes': 1, 'env/dropped_groups': 1 } },
  );
  const m = meanMetrics(mergeSums([shardA, shardB]), 'val/');
  assert.equal(m['val/Lake/score'], (0.25 + 1) / 2);
  assert.equal(m['val/Box/score'], 4.75);
  assert.equal(m['val/score'], (0.25 + 1 + 4.75) / 3);
  assert.equal(m['val/env/Lake/success'], 5 / 8);
  assert.equal(m['val/env/Box/success'], 1 / 2);
  assert.equal(m['val/env/score'], (1 + 4 + 9.5) / 10, 'the per-trajectory mean stays as it was');
  assert.equal(m['val/env/failed_episodes'], 3, 'totals are summed, not averaged');
  assert.equal(m['val/env/dropped_groups'], 1);
});

test('without groupScores (training) there are no per-group keys; totals default to none', () => {
  const m = meanMetrics(sumMetrics([traj('Lake', 0, 1, true)]));
  assert.deepEqual(
    Object.keys(m).filter((k) => !k.startsWith('env/')),
    [],
  );
  assert.equal(m['env/Lake/action_is_valid'], 1);
  assert.equal(m['env/response_length'], 2);
});
