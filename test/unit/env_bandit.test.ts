import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BANDIT_INSTRUCTION, BanditEnv } from '../../src/envs/bandit';
import { ENV_TYPES, createEnv } from '../../src/envs/registry';

test('golden first observation and shuffled arm order', () => {
  const env = new BanditEnv();
  assert.deepEqual(env.reset(0), { observation: 'Arms: dragon, phoenix', info: { env_instruction: BANDIT_INSTRUCTION } });
  assert.equal(env.reset(5).observation, 'Arms: phoenix, dragon');
  assert.equal(BANDIT_INSTRUCTION, "Bandit. Each arm's payout fits its name. Pick one: <answer>NAME</answer>.");
  let dragonFirst = 0;
  for (let s = 0; s < 2000; s++) if (env.reset(s).observation.startsWith('Arms: dragon')) dragonFirst++;
  assert.ok(Math.abs(dragonFirst / 2000 - 0.5) < 0.05, `dragon first ${dragonFirst}/2000`);
});

test('scripted payouts (envId 0, seeds 0..3 pick dragon; phoenix; invalid)', () => {
  const env = new BanditEnv({ format_penalty: -0.1 }, { envId: 0 });
  const rewards = [0, 1, 2, 3].map((s) => { env.reset(s); return env.step('<answer>dragon</answer><|im_end|>').reward; });
  assert.deepEqual(rewards, [0, 1, 0, 1]);
  env.reset(1);
  assert.equal(env.render(), 'Arms: dragon, phoenix');
  assert.deepEqual(env.step('<answer>Dragon</answer>'), {
    observation: 'dragon: 1 points', reward: 1, terminated: true,
    info: { success: true, action_is_valid: true, action_is_effective: true, format_penalty: 0 },
  });
  assert.throws(() => env.step('<answer>dragon</answer>'), /terminated/);
  env.reset(1);
  assert.deepEqual(env.step('<answer> phoenix </answer>'), {
    observation: 'phoenix: 0.1 points', reward: 0.1, terminated: true,
    info: { success: false, action_is_valid: true, action_is_effective: true, format_penalty: 0 },
  });
  env.reset(1);
  assert.deepEqual(env.step('<answer>unicorn</answer>'), {
    observation: 'Invalid answer.', reward: -0.1, terminated: true,
    info: { success: false, action_is_valid: false, action_is_effective: false, format_penalty: -0.1 },
  });
});

test('high arm pays 1 with probability 0.25', () => {
  const env = new BanditEnv({}, { envId: 3 });
  let hits = 0;
  for (let s = 0; s < 20_000; s++) { env.reset(s); hits += env.step('<answer>dragon</answer>').reward; }
  assert.ok(Math.abs(hits / 20_000 - 0.25) < 0.015, `hit rate ${hits / 20_000}`);
});

test('group members: same seed, same observation; payouts differ by envId, equal without it', () => {
  const payouts = (opts: { envId?: number }[]): number[][] => opts.map((o) => {
    const env = new BanditEnv({}, o);
    return Array.from({ length: 40 }, (_, s) => { env.reset(s); return env.step('<answer>dragon</answer>').reward; });
  });
  const [a, b] = payouts([{ envId: 0 }, { envId: 1 }]);
  assert.notDeepEqual(a, b);
  const [c, d] = payouts([{}, {}]);
  assert.deepEqual(c, d);
  assert.equal(new BanditEnv({}, { envId: 0 }).reset(9).observation, new BanditEnv({}, { envId: 5 }).reset(9).observation);
});

test('custom arm names and scores', () => {
  const env = createEnv('bandit', { lo_arm_name: 'trout', hi_arm_name: 'shark', lo_arm_score: 0.2, hi_arm_hiscore_prob: 1 });
  assert.deepEqual([...env.actionNames], ['trout', 'shark']);
  env.reset(0);
  assert.equal(env.step('<answer>SHARK</answer>').observation, 'shark: 1 points');
});

test('registry: env types and error messages name key, value and what is allowed', () => {
  assert.deepEqual([...ENV_TYPES], ['frozen_lake', 'bandit']);
  assert.equal(createEnv('frozen_lake').envType, 'frozen_lake');
  assert.throws(() => createEnv('sokobann'), /env_type "sokobann" is not known; allowed: frozen_lake, bandit/);
  assert.throws(() => createEnv('frozen_lake', { sise: 4 }), /unknown key "sise" \(did you mean "size"\?\)/);
  assert.throws(() => createEnv('frozen_lake', { p: 1.5 }), /p must be a finite number in \(0, 1\], got 1\.5/);
  assert.throws(() => createEnv('frozen_lake', { size: 4.5 }), /size must be an integer in \[2, 64\], got 4\.5/);
  assert.throws(() => createEnv('frozen_lake', { is_slippery: 'no' }), /is_slippery must be true or false, got "no"/);
  assert.throws(() => createEnv('frozen_lake', { success_rate: -1 }), /success_rate/);
  assert.throws(() => createEnv('bandit', { hi_arm_name: 'Phoenix' }), /hi_arm_name must differ/);
  assert.throws(() => createEnv('bandit', { lo_arm_name: 'two words' }), /lo_arm_name must be a word/);
  assert.throws(() => createEnv('bandit', { hi_arm_hiscore_prob: 2 }), /hi_arm_hiscore_prob/);
  assert.throws(() => createEnv('bandit', {}, { envId: -1 }), /envId must be a non-negative integer, got -1/);
});
