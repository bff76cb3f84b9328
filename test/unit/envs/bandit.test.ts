import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BANDIT_ARM_PAIRS, BANDIT_INSTRUCTION, BanditEnv } from '../../../src/envs/bandit';
import { createEnv, ENV_TYPES } from '../../../src/envs/registry';
import { charTokenizer } from '../../../src/model/tokenizer';
import { EpisodeChat, fillTemplate, firstUserMessage } from '../../../src/rollout/chat';

const pick = (name: string): string => `<answer>${name}</answer><|im_end|>`;

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
  const rewards = [0, 1, 2, 3].map((s) => {
    env.reset(s);
    return env.step('<answer>dragon</answer><|im_end|>').reward;
  });
  assert.deepEqual(rewards, [0, 1, 0, 1]);
  env.reset(1);
  assert.equal(env.render(), 'Arms: dragon, phoenix');
  assert.deepEqual(env.step('<answer>Dragon</answer>'), {
    observation: 'dragon: 1 points',
    reward: 1,
    terminated: true,
    info: { success: true, action_is_valid: true, action_is_effective: true, format_penalty: 0 },
  });
  assert.throws(() => env.step('<answer>dragon</answer>'), /terminated/);
  env.reset(1);
  assert.deepEqual(env.step('<answer> phoenix </answer>'), {
    observation: 'phoenix: 0.1 points',
    reward: 0.1,
    terminated: true,
    info: { success: false, action_is_valid: true, action_is_effective: true, format_penalty: 0 },
  });
  env.reset(1);
  assert.deepEqual(env.step('<answer>unicorn</answer>'), {
    observation: 'Invalid answer.',
    reward: -0.1,
    terminated: true,
    info: { success: false, action_is_valid: false, action_is_effective: false, format_penalty: -0.1 },
  });
});

test('high arm pays 1 with probability 0.25', () => {
  const env = new BanditEnv({}, { envId: 3 });
  let hits = 0;
  for (let s = 0; s < 20_000; s++) {
    env.reset(s);
    hits += env.step('<answer>dragon</answer>').reward;
  }
  assert.ok(Math.abs(hits / 20_000 - 0.25) < 0.015, `hit rate ${hits / 20_000}`);
});

test('group members: same seed, same observation; payouts differ by envId, equal without it', () => {
  const payouts = (opts: { envId?: number }[]): number[][] =>
    opts.map((o) => {
      const env = new BanditEnv({}, o);
      return Array.from({ length: 40 }, (_, s) => {
        env.reset(s);
        return env.step('<answer>dragon</answer>').reward;
      });
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
  for (const t of ['frozen_lake', 'bandit', 'countdown']) assert.ok(ENV_TYPES.includes(t), t);
  assert.equal(createEnv('frozen_lake').envType, 'frozen_lake');
  assert.throws(() => createEnv('sokobann'), /env_type "sokobann" is not known; allowed: frozen_lake, bandit, /);
  assert.throws(() => createEnv('frozen_lake', { sise: 4 }), /unknown key "sise" \(did you mean "size"\?\)/);
  assert.throws(() => createEnv('frozen_lake', { p: 1.5 }), /p must be a finite number in \(0, 1\], got 1\.5/);
  assert.throws(() => createEnv('frozen_lake', { size: 4.5 }), /size must be an integer in \[2, 64\], got 4\.5/);
  assert.throws(() => createEnv('frozen_lake', { is_slippery: 'no' }), /is_slippery must be true or false, got "no"/);
  // Values are echoed as written: a list stays a list, YAML's .nan and .inf keep their spelling.
  assert.throws(() => createEnv('frozen_lake', { size: [4] }), /size must be an integer in \[2, 64\], got \[4\]$/);
  assert.throws(() => createEnv('frozen_lake', { size: Number.NaN }), /size must be an integer in \[2, 64\], got \.nan$/);
  assert.throws(() => createEnv('frozen_lake', { p: -Infinity }), /p must be a finite number in \(0, 1\], got -\.inf$/);
  assert.throws(() => createEnv('frozen_lake', { success_rate: -1 }), /success_rate/);
  assert.throws(() => createEnv('bandit', { hi_arm_name: 'Phoenix' }), /hi_arm_name must differ/);
  assert.throws(() => createEnv('bandit', { lo_arm_name: 'two words' }), /lo_arm_name must be a word/);
  assert.throws(() => createEnv('bandit', { hi_arm_hiscore_prob: 2 }), /hi_arm_hiscore_prob/);
  assert.throws(() => createEnv('bandit', {}, { envId: -1 }), /envId must be a non-negative integer, got -1/);
});

test('golden full prompt of the quickstart Bandit tag (configs/bandit.yaml templates), seed 0', () => {
  const env = new BanditEnv({ format_penalty: -0.1 });
  const first = env.reset(0);
  const user = fillTemplate('{observation}', {
    turn_idx: 1,
    observation: first.observation,
    actions_left: 1,
    max_response_length: 32,
    suffix: '',
  });
  assert.equal(
    new EpisodeChat(charTokenizer(), '').prompt(firstUserMessage(first.info.env_instruction, user)),
    '<|im_start|>user\n' +
      "Bandit. Each arm's payout fits its name. Pick one: <answer>NAME</answer>.\n" +
      'Arms: dragon, phoenix<|im_end|>\n' +
      '<|im_start|>assistant\n',
  );
});

test('RAGEN arm-name pairs: 12 train, 8 held-out, disjoint; one pair per reset, shared by a group', () => {
  assert.equal(BANDIT_ARM_PAIRS.train.length, 12);
  assert.equal(BANDIT_ARM_PAIRS.test.length, 8);
  const trainNames = new Set(BANDIT_ARM_PAIRS.train.flat());
  assert.ok(BANDIT_ARM_PAIRS.test.flat().every((n) => !trainNames.has(n)));
  const train = new BanditEnv({ arm_pairs: 'train' });
  // Golden first observations (pair from Rng('bandit/pair', seed), order from Rng('bandit/order', seed)).
  assert.deepEqual(
    [0, 1, 3].map((s) => train.reset(s).observation),
    ['Arms: StockBroker, Accountant', 'Arms: Pilot, Postman', 'Arms: Investor, Librarian'],
  );
  train.reset(0);
  assert.deepEqual([...train.actionNames], ['Accountant', 'StockBroker']);
  assert.equal(train.highArm, 'StockBroker');
  const seen = new Set<string>();
  for (let s = 0; s < 500; s++) {
    train.reset(s);
    seen.add(train.actionNames.join('/'));
  }
  assert.equal(seen.size, 12); // every train pair is drawn
  const a = new BanditEnv({ arm_pairs: 'test' }, { envId: 0 });
  const b = new BanditEnv({ arm_pairs: 'test' }, { envId: 7 });
  assert.equal(a.reset(11).observation, b.reset(11).observation);
});

test('scripted train-pair episodes (envId 0): the high arm pays 1 or 0, the low arm 0.1', () => {
  const env = new BanditEnv({ arm_pairs: 'train' }, { envId: 0 });
  env.reset(1); // Arms: Pilot, Postman; Pilot (risky) is the high arm; payout draw of seed 1 hits (see the first test)
  assert.deepEqual(env.step(pick('pilot')), {
    observation: 'Pilot: 1 points',
    reward: 1,
    terminated: true,
    info: { success: true, action_is_valid: true, action_is_effective: true, format_penalty: 0 },
  });
  env.reset(0); // Arms: StockBroker, Accountant; the payout draw of seed 0 misses
  assert.deepEqual([env.step(pick('StockBroker')).reward, env.render()], [0, 'StockBroker: 0 points']);
  env.reset(0);
  assert.deepEqual(env.step(pick('Accountant')), {
    observation: 'Accountant: 0.1 points',
    reward: 0.1,
    terminated: true,
    info: { success: false, action_is_valid: true, action_is_effective: true, format_penalty: 0 },
  });
  env.reset(0);
  assert.equal(env.step(pick('dragon')).info.action_is_valid, false); // not an arm of this pair
});

test('reversed risk: the low-risk-sounding name is the high arm (held-out pairs)', () => {
  const env = new BanditEnv({ arm_pairs: 'test', reverse_risk: true, hi_arm_hiscore_prob: 1 });
  assert.equal(env.reset(0).observation, 'Arms: Consultant, Bookkeeper');
  assert.equal(env.highArm, 'Bookkeeper');
  assert.deepEqual([env.step(pick('Bookkeeper')).reward, env.render()], [1, 'Bookkeeper: 1 points']);
  env.reset(0);
  const r = env.step(pick('Consultant'));
  assert.deepEqual([r.reward, r.info.success], [0.1, false]);
  // RAGEN's BanditTest written with names: Trader (risky-sounding) pays the low score.
  const named = new BanditEnv({ lo_arm_name: 'Trader', hi_arm_name: 'Librarian' });
  named.reset(0);
  assert.equal(named.highArm, 'Librarian');
  const flipped = new BanditEnv({ reverse_risk: true });
  flipped.reset(0);
  assert.equal(flipped.highArm, 'phoenix');
});

test('explicit arm_pairs and their errors', () => {
  const env = createEnv('bandit', {
    arm_pairs: [
      ['snail', 'cheetah'],
      ['tortoise', 'hare'],
    ],
  });
  const seen = new Set<string>();
  for (let s = 0; s < 50; s++) {
    env.reset(s);
    seen.add(env.actionNames.join('/'));
  }
  assert.deepEqual([...seen].sort(), ['snail/cheetah', 'tortoise/hare']);
  assert.throws(() => createEnv('bandit', { arm_pairs: 'val' }), /arm_pairs must be "train", "test" or a non-empty list .* got "val"/);
  assert.throws(() => createEnv('bandit', { arm_pairs: [] }), /arm_pairs must be/);
  assert.throws(() => createEnv('bandit', { arm_pairs: [['a b', 'c']] }), /arm_pairs\[0\] must be two names, each a word/);
  assert.throws(
    () =>
      createEnv('bandit', {
        arm_pairs: [
          ['x', 'y'],
          ['Owl', 'owl'],
        ],
      }),
    /names of arm_pairs\[1\] must differ/,
  );
  assert.throws(
    () => createEnv('bandit', { arm_pairs: 'train', lo_arm_name: 'x' }),
    /give arm_pairs or lo_arm_name\/hi_arm_name, not both/,
  );
  assert.throws(() => createEnv('bandit', { reverse_risk: 'yes' }), /reverse_risk must be true or false, got "yes"/);
  assert.throws(() => createEnv('bandit', { env_instruction: 3 }), /env_instruction must be a string, got 3/);
  assert.equal(createEnv('bandit', { env_instruction: '' }).reset(0).info.env_instruction, '');
});
