/**
 * `starpo eval` without a server: the checkpoint an eval target names in messages, and the progress text
 * from the rollout activities' heartbeat details.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rolloutActivityText } from '../../../src/cli/eval';
import { parseTarget } from '../../../src/cli/eval_target';

test('eval targets name their checkpoint as given: the key, --step N, or the latest checkpoint', () => {
  const key = 'runs/r1/checkpoints/step-000099/manifest.json';
  assert.deepEqual(parseTarget({ target: key }), { runId: 'r1', step: 99, label: key });
  assert.deepEqual(parseTarget({ target: 'r1', step: 7 }), { runId: 'r1', step: 7, label: '--step 7' });
  assert.deepEqual(parseTarget({ target: 'r1' }), { runId: 'r1', step: undefined, label: 'latest checkpoint' });
  assert.throws(() => parseTarget({ target: 'runs/../checkpoints/step-000001/manifest.json' }), { name: 'InvalidKeyPartError' });
  assert.throws(() => parseTarget({ target: '../etc' }), {
    name: 'BadInputError',
    message: /^\.\.\/etc: not a run id or a checkpoint key/,
  });
});

test('eval progress inside a shard: env resets, then the turn and the episodes still playing per running shard', () => {
  assert.equal(rolloutActivityText([]), 'shard rollouts starting');
  assert.equal(rolloutActivityText([{ turn: -1, active: 3 }]), 'resetting envs (3)');
  assert.equal(
    rolloutActivityText([{ turn: 0, active: 8 }, { turn: 2, active: 5 }, {}]),
    'turn 1: 8 episodes playing, turn 3: 5 episodes playing',
  );
});
