import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  COUNTDOWN_INSTRUCTION,
  CountdownEnv,
  countdownSolution,
  evaluateArithmetic,
  generateCountdown,
  MAX_EXPRESSION_LENGTH,
} from '../../../src/envs/countdown';
import { createEnv } from '../../../src/envs/registry';
import { Rng } from '../../../src/util/rng';

const ans = (e: string): string => `<answer>${e}</answer><|im_end|>`;

test('arithmetic: precedence, associativity, parentheses, unary minus, number literals', () => {
  assert.deepEqual(evaluateArithmetic('2 + 3 * 4'), { value: 14, numbers: [2, 3, 4] }); // 3*4 = 12 first
  assert.deepEqual(evaluateArithmetic('(2 + 3) * 4'), { value: 20, numbers: [2, 3, 4] });
  assert.deepEqual(evaluateArithmetic('10 - 4 - 3'), { value: 3, numbers: [10, 4, 3] }); // (10-4)-3, not 10-(4-3)=9
  assert.deepEqual(evaluateArithmetic('48 / 4 / 2'), { value: 6, numbers: [48, 4, 2] }); // (48/4)/2 = 12/2
  assert.deepEqual(evaluateArithmetic('-3 + 5'), { value: 2, numbers: [3, 5] });
  assert.deepEqual(evaluateArithmetic('2 - -3'), { value: 5, numbers: [2, 3] });
  assert.deepEqual(evaluateArithmetic('-(2 + 3) * -2'), { value: 10, numbers: [2, 3, 2] }); // -(5) * -2
  assert.deepEqual(evaluateArithmetic(' 1.5*4 '), { value: 6, numbers: [1.5, 4] });
  assert.deepEqual(evaluateArithmetic('((7))'), { value: 7, numbers: [7] });
  assert.equal(evaluateArithmetic('1 / 0')!.value, Infinity);
  assert.ok(Math.abs(evaluateArithmetic('1 / 3 * 3')!.value - 1) < 1e-12);
});

test('arithmetic: anything outside the grammar is invalid (null), never evaluated', () => {
  for (const bad of [
    '',
    '   ',
    '2 +',
    '(2 + 3',
    '2 + 3)',
    '2 3',
    '+2',
    '2 ** 3',
    '2 ^ 3',
    '2 x 3',
    '2 + 3 = 5',
    'Math.max(1, 2)',
    'process.exit(1)',
    '1e3',
    '.5 + 1',
    '2..3',
    '()',
    '2 * (3 +)',
  ]) {
    assert.equal(evaluateArithmetic(bad), null, JSON.stringify(bad));
  }
  assert.equal(evaluateArithmetic(`1${' + 1'.repeat(MAX_EXPRESSION_LENGTH)}`), null); // too long
  assert.equal(evaluateArithmetic(`${'('.repeat(400)}1${')'.repeat(400)}`)!.value, 1); // deep but within the limit
});

test('golden first observations (3 numbers in 1..99 by default; 4 by config)', () => {
  const env = new CountdownEnv();
  const r = env.reset(0);
  assert.deepEqual(r, { observation: 'Target: 104, nums: [25, 75, 54]', info: { env_instruction: COUNTDOWN_INSTRUCTION } });
  assert.equal(
    COUNTDOWN_INSTRUCTION,
    'Countdown. Use each number once with + - * / ( ) to reach the target. Answer <answer>expression</answer>.',
  );
  assert.equal(env.reset(1).observation, 'Target: 130, nums: [69, 69, 8]'); // 69 + 69 - 8 = 130
  assert.deepEqual(env.actionNames, []);
  const four = new CountdownEnv({ num_count: 4, max_number: 20 });
  assert.equal(four.reset(0).observation, 'Target: 17, nums: [14, 2, 20, 15]'); // 14 + 20 - 2 - 15 = 17
  assert.deepEqual(four.solve(), ['14 + 20 - 2 - 15']);
});

test('scoring (seed 0: target 104, nums [25, 75, 54]): 1, format score 0.1, 0, invalid', () => {
  const env = new CountdownEnv({ format_penalty: -0.1 });
  const play = (text: string) => {
    env.reset(0);
    return env.step(text);
  };
  // 75 + 54 - 25 = 104: right value, right numbers.
  assert.deepEqual(play(ans('75 + 54 - 25')), {
    observation: 'Your answer gets 1 points.',
    reward: 1,
    terminated: true,
    info: { success: true, action_is_valid: true, action_is_effective: true, format_penalty: 0 },
  });
  // Any order and form that reaches 104: (54 - 25) + 75 = 29 + 75 = 104.
  assert.equal(play(ans(' (54 - 25) + 75 ')).reward, 1);
  // Right multiset, wrong value: 25 + 75 + 54 = 154 -> format score 0.1.
  assert.deepEqual(play(ans('25 + 75 + 54')), {
    observation: 'Your answer gets 0.1 points.',
    reward: 0.1,
    terminated: true,
    info: { success: false, action_is_valid: true, action_is_effective: true, format_penalty: 0 },
  });
  // Wrong numbers: 75 + 29 = 104 has the right value but not the given numbers -> 0.
  assert.deepEqual([play(ans('75 + 29')).reward, env.render()], [0, 'Your answer gets 0 points.']);
  assert.equal(play(ans('75 + 54 - 25 + 0')).reward, 0); // an extra number
  assert.equal(play(ans('75 + 54')).reward, 0); // a missing number
  // Not an expression, or no answer tags: invalid, reward = format_penalty.
  for (const text of [ans('75 + 54 - 25 = 104'), ans('seventy-five'), '75 + 54 - 25']) {
    assert.deepEqual(play(text), {
      observation: 'Invalid answer.',
      reward: -0.1,
      terminated: true,
      info: { success: false, action_is_valid: false, action_is_effective: false, format_penalty: -0.1 },
    });
  }
  // Division: 75 / 25 * 54 = 3 * 54 = 162, right numbers -> 0.1; the think pattern when enabled.
  assert.equal(play(ans('75 / 25 * 54')).reward, 0.1);
  const think = new CountdownEnv({}, { enableThink: true });
  think.reset(0);
  assert.equal(think.step('<think>75+54=129, 129-25=104</think> <answer>75 + 54 - 25</answer>').reward, 1);
});

test('duplicates count as a multiset (seed 1: nums [69, 69, 8])', () => {
  const env = new CountdownEnv();
  env.reset(1);
  assert.equal(env.step(ans('69 + 69 - 8')).reward, 1);
  env.reset(1);
  assert.equal(env.step(ans('69 - 8')).reward, 0); // one 69 missing
});

test('generated instances: positive target, numbers in range, solution earns 1 (2,000 seeds each)', () => {
  for (const numCount of [3, 4]) {
    const env = new CountdownEnv({ num_count: numCount, max_number: 50 });
    for (let seed = 0; seed < 2000; seed++) {
      const obs = env.reset(seed).observation;
      const m = /^Target: (\d+), nums: \[(.*)\]$/.exec(obs);
      assert.ok(m, obs);
      const nums = m[2].split(', ').map(Number);
      assert.equal(nums.length, numCount);
      assert.ok(Number(m[1]) > 0 && nums.every((n) => Number.isInteger(n) && n >= 1 && n <= 50), obs);
      const [solution] = env.solve()!;
      const r = env.step(ans(solution));
      assert.deepEqual([r.reward, r.info.success], [1, true], `${obs} ${solution}`);
      assert.equal(env.solve(), null); // the episode is over
    }
  }
});

test('generateCountdown and countdownSolution by hand', () => {
  const inst = generateCountdown(3, 99, new Rng('countdown', 0));
  assert.deepEqual(inst, { nums: [25, 75, 54], signs: [-1, 1, 1], target: 104 }); // -25 + 75 + 54 = 104
  assert.equal(countdownSolution(inst), '75 + 54 - 25');
  assert.equal(countdownSolution({ nums: [3, 5, 2, 9], signs: [1, -1, 1, 1], target: 9 }), '3 + 2 + 9 - 5');
});

test('env_config errors name the key, the value and what is allowed; lifecycle errors', () => {
  assert.equal(createEnv('countdown').envType, 'countdown');
  assert.throws(() => createEnv('countdown', { num_count: 5 }), /num_count must be an integer in \[3, 4\], got 5/);
  assert.throws(() => createEnv('countdown', { max_number: 0 }), /max_number must be an integer in \[1, 1000000\], got 0/);
  assert.throws(() => createEnv('countdown', { format_score: 2 }), /format_score must be a finite number in \[0, 1\], got 2/);
  assert.throws(() => createEnv('countdown', { num_cont: 3 }), /unknown key "num_cont" \(did you mean "num_count"\?\)/);
  assert.throws(() => createEnv('countdown', { action_pattern: '(' }), /action_pattern must be a regular expression/);
  assert.equal(createEnv('countdown', { env_instruction: 'Solve.' }).reset(0).info.env_instruction, 'Solve.');
  const env = new CountdownEnv();
  assert.throws(() => env.step(ans('1')), /reset/);
  assert.throws(() => env.solve(), /reset/);
  assert.throws(() => env.reset(-1), /seed/);
  env.reset(0);
  env.step('x');
  assert.throws(() => env.step(ans('1')), /terminated/);
});
