/** The `chaos` fault-injection env of the tests (test/helpers/chaos_env.ts). */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import '../../helpers/chaos_env';
import { createEnv } from '../../../src/envs/registry';
import { Rng } from '../../../src/util/rng';

const LAKE = { inner_env_type: 'frozen_lake', inner_env_config: { is_slippery: false } };
const chaos = (faults: Record<string, unknown>, envId?: number) =>
  createEnv('chaos', { ...LAKE, ...faults }, envId === undefined ? {} : { envId });

test('without faults it plays the inner env unchanged, solve() included', () => {
  const inner = createEnv('frozen_lake', { is_slippery: false });
  const env = chaos({}, 3);
  assert.deepEqual(env.reset(11), inner.reset(11));
  assert.deepEqual(env.actionNames, inner.actionNames);
  assert.deepEqual(env.solve!(), inner.solve!());
  assert.deepEqual(env.step('<answer>Left</answer>'), inner.step('<answer>Left</answer>'));
  assert.equal(env.render(), inner.render());
  assert.equal(createEnv('chaos', { inner_env_type: 'bandit' }).solve, undefined, 'no solve() when the inner env has none');
});

test('throw_on_step k throws in the k-th step of the chosen env ids only, in every episode', () => {
  const hit = chaos({ throw_on_step: 2, env_ids: [5] }, 5);
  hit.reset(1);
  hit.step('<answer>Jump</answer>');
  assert.throws(() => hit.step('<answer>Jump</answer>'), /^Error: chaos: injected failure in step 2 \(env id 5, seed 1\)$/);
  hit.reset(2);
  hit.step('<answer>Jump</answer>');
  assert.throws(() => hit.step('<answer>Jump</answer>'), /step 2 \(env id 5, seed 2\)/);
  const spared = chaos({ throw_on_step: 2, env_ids: [5] }, 4);
  spared.reset(1);
  spared.step('<answer>Jump</answer>');
  assert.doesNotThrow(() => spared.step('<answer>Jump</answer>'));
  assert.doesNotThrow(() => chaos({ throw_on_reset: true, env_ids: [5] }).reset(1), 'an env without an id never matches a list');
});

test('seeds and probability pick the faulty episodes, seeded by (seed, env id)', () => {
  // Rng('chaos', seed, 2).next(): seed 7 -> 0.8146, seed 8 -> 0.5674
  const env = chaos({ throw_on_reset: true, seeds: [7, 8], probability: 0.7 }, 2);
  const faulty = [5, 6, 7, 8].filter((seed) => {
    try {
      env.reset(seed);
      return false;
    } catch {
      return true;
    }
  });
  assert.deepEqual(faulty, [8]);
  assert.equal(new Rng('chaos', 8, 2).next() < 0.7 && new Rng('chaos', 7, 2).next() >= 0.7, true);
});

test('hang_on_step blocks the step for hang_seconds, then steps normally', () => {
  const env = chaos({ hang_on_step: 1, hang_seconds: 0.1 }, 0);
  env.reset(1);
  const started = performance.now();
  const out = env.step('<answer>Jump</answer>');
  assert.ok(performance.now() - started >= 100);
  assert.equal(out.info.action_is_valid, false);
});

test('bad env_config: named key and value; the inner env config is validated too', () => {
  assert.throws(() => createEnv('chaos', {}), /env_config of chaos: inner_env_type is required/);
  assert.throws(() => createEnv('chaos', { ...LAKE, throw_on_stp: 3 }), /unknown key "throw_on_stp" \(did you mean "throw_on_step"\?\)/);
  assert.throws(() => createEnv('chaos', { ...LAKE, env_ids: [1, -2] }), /env_ids must be a list of non-negative integers, got \[1,-2\]/);
  assert.throws(() => createEnv('chaos', { ...LAKE, throw_on_step: 0 }), /throw_on_step must be an integer in \[1, 1000000\], got 0/);
  assert.throws(
    () => createEnv('chaos', { inner_env_type: 'frozen_lake', inner_env_config: { size: 1 } }),
    /env_config of frozen_lake: size/,
  );
  assert.throws(() => createEnv('chaos', { inner_env_type: 'lava' }), /env_type "lava" is not known/);
});
