import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FrozenLakeEnv, frozenLakeInstruction, generateMap, renderLake, shortestPath } from '../../../src/envs/frozen_lake';
import { Rng } from '../../../src/util/rng';

const ans = (a: string): string => `<answer>${a}</answer><|im_end|>`;

test('golden first observation, non-slippery and slippery (same map for a seed)', () => {
  const flat = new FrozenLakeEnv({ is_slippery: false });
  const r0 = flat.reset(0);
  assert.equal(r0.observation, '___G\n_O__\n_PO_\nOO__');
  assert.equal(r0.info.env_instruction, 'FrozenLake. Reach G, avoid O. P is you. Answer <answer>Left|Down|Right|Up</answer>.');
  assert.deepEqual(flat.lakeMap!.desc, ['FFFG', 'FHFF', 'FSHF', 'HHFF']);
  assert.equal(flat.reset(42).observation, '__OP\n_O_G\n____\n____');
  const slip = new FrozenLakeEnv({ is_slippery: true }, { envId: 0 });
  const r1 = slip.reset(0);
  assert.equal(r1.observation, '___G\n_O__\n_PO_\nOO__');
  assert.equal(r1.info.env_instruction, frozenLakeInstruction(true));
  assert.equal(slip.reset(123).observation, '____\n____\nG___\n__P_');
});

test('non-slippery scripted episode: format penalty, blocked move, goal', () => {
  const env = new FrozenLakeEnv({ is_slippery: false, format_penalty: -0.01 });
  env.reset(0);
  const script = ['nothing', 'Left', 'Up', 'Up', 'Up', 'Right', 'Right', 'Right'];
  const rewards: number[] = [];
  const done: boolean[] = [];
  const valid: boolean[] = [];
  const effective: boolean[] = [];
  const penalties: number[] = [];
  const success: boolean[] = [];
  let last = '';
  for (const a of script) {
    const r = env.step(a === 'nothing' ? 'no tags here' : ans(a));
    rewards.push(r.reward);
    done.push(r.terminated);
    valid.push(r.info.action_is_valid);
    effective.push(r.info.action_is_effective);
    last = r.observation;
    penalties.push(r.info.format_penalty as number);
    success.push(r.info.success);
    if (a === 'nothing') assert.equal(r.observation, '___G\n_O__\n_PO_\nOO__');
    if (a === 'Left') assert.equal(r.observation, '___G\n_O__\nP_O_\nOO__');
  }
  assert.deepEqual(rewards, [-0.01, 0, 0, 0, 0, 0, 0, 1]);
  assert.deepEqual(done, [false, false, false, false, false, false, false, true]);
  assert.deepEqual(valid, [false, true, true, true, true, true, true, true]);
  assert.deepEqual(effective, [false, true, true, true, false, true, true, true]); // the 4th Up hits the top wall
  assert.deepEqual(penalties, [-0.01, 0, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(success, [false, false, false, false, false, false, false, true]);
  assert.equal(last, '___√\n_O__\n__O_\nOO__');
  assert.equal(env.render(), last);
  assert.throws(() => env.step(ans('Left')), /terminated/);
});

test('falling in a hole: X, reward 0, terminated, not success', () => {
  const env = new FrozenLakeEnv({ is_slippery: false });
  env.reset(0);
  const r = env.step(ans('Down'));
  assert.deepEqual(r, {
    observation: '___G\n_O__\n__O_\nOX__',
    reward: 0,
    terminated: true,
    info: { success: false, action_is_valid: true, action_is_effective: true, format_penalty: 0 },
  });
});

test("reward_schedule: gymnasium's goal / hole / frozen rewards per move; a bad value is named", () => {
  // Map of seed 0: '___G\n_O__\n_PO_\nOO__'. Left, Up, Up, Up (the top wall), then Right x3 to G.
  const env = new FrozenLakeEnv({ is_slippery: false, format_penalty: -0.5, reward_schedule: [2, -1, -0.01] });
  env.reset(0);
  const rewards = ['nothing', 'Left', 'Up', 'Up', 'Up', 'Right', 'Right', 'Right'].map(
    (a) => env.step(a === 'nothing' ? 'no tags here' : ans(a)).reward,
  );
  assert.deepEqual(rewards, [-0.5, -0.01, -0.01, -0.01, -0.01, -0.01, -0.01, 2]); // the wall bump lands on ice too
  env.reset(0);
  const hole = env.step(ans('Down'));
  assert.equal(hole.reward, -1);
  assert.equal(hole.info.success, false);
  assert.throws(
    () => new FrozenLakeEnv({ reward_schedule: [1, 0] }),
    /env_config of frozen_lake: reward_schedule must be a list of 3 finite numbers, got \[1,0\]/,
  );
  assert.throws(() => new FrozenLakeEnv({ reward_schedule: 1 }), /reward_schedule must be a list of 3 finite numbers, got 1/);
});

test('slippery golden trajectory (seed 123, envId 0) is deterministic', () => {
  const run = (): string[] => {
    const env = new FrozenLakeEnv({ is_slippery: true }, { envId: 0 });
    env.reset(123);
    return ['Up', 'Up', 'Up', 'Up', 'Right', 'Right'].map((a) => env.step(ans(a)).observation);
  };
  const obs = run();
  assert.deepEqual(obs, [
    '____\n____\nG___\n_P__',
    '____\n____\nG___\n__P_',
    '____\n____\nG___\n___P',
    '____\n____\nG___\n___P',
    '____\n____\nG___\n___P',
    '____\n____\nG__P\n____',
  ]);
  assert.deepEqual(run(), obs);
});

test('max_steps truncates; step before reset throws; bad seed throws', () => {
  const env = new FrozenLakeEnv({ is_slippery: false, max_steps: 2 });
  assert.throws(() => env.step(ans('Up')), /reset/);
  assert.throws(() => env.reset(-1), /seed/);
  env.reset(7); // P at (1,1), G at (3,1), no holes on the way
  assert.equal(env.step('x').terminated, false);
  const r = env.step(ans('Right'));
  assert.equal(r.terminated, true);
  assert.equal(r.info.truncated, true);
  assert.equal(r.info.success, false);
});

test('10,000 generated 4x4 maps are all solvable, start != goal, hole rate near 1 - p', () => {
  const rng = new Rng('test/maps');
  let holes = 0;
  let cells = 0;
  for (let i = 0; i < 10_000; i++) {
    const m = generateMap(4, 0.8, rng);
    assert.notDeepEqual(m.start, m.goal);
    assert.equal(m.desc[m.start.row][m.start.col], 'S');
    assert.equal(m.desc[m.goal.row][m.goal.col], 'G');
    const path = shortestPath(m.desc, m.start, m.goal);
    assert.ok(path !== null && path.length >= 1, `map ${i} unsolvable: ${m.desc.join('/')}`);
    for (const row of m.desc)
      for (const ch of row) {
        if (ch === 'H') holes++;
        if (ch === 'H' || ch === 'F') cells++;
      }
  }
  const rate = holes / cells; // rejection of unsolvable maps lowers it a little below 0.2
  assert.ok(rate > 0.15 && rate < 0.21, `hole rate ${rate}`);
});

test('shortestPath: BFS length and unreachable goal', () => {
  assert.deepEqual(shortestPath(['SFFF', 'FFFF', 'FFFF', 'FFFG'], { row: 0, col: 0 }, { row: 3, col: 3 })!.length, 6);
  assert.equal(shortestPath(['SH', 'HG'], { row: 0, col: 0 }, { row: 1, col: 1 }), null);
  assert.deepEqual(shortestPath(['SF', 'HG'], { row: 0, col: 0 }, { row: 1, col: 1 }), ['Right', 'Down']);
});

test('slippery transitions: intended and each perpendicular move near 1/3 (success_rate 1/3)', () => {
  // p = 1 (no holes). Intend Down from a cell where Left, Down, Right lead to 3 distinct cells.
  const counts = { Left: 0, Down: 0, Right: 0 };
  let n = 0;
  for (let seed = 0; n < 30_000; seed++) {
    const env = new FrozenLakeEnv({ is_slippery: true, p: 1 }, { envId: seed % 7 });
    env.reset(seed);
    const s = env.position;
    if (
      s.row > 2 ||
      s.col < 1 ||
      s.col > 2 ||
      env.lakeMap!.desc[s.row + 1][s.col] === 'G' ||
      env.lakeMap!.desc[s.row][s.col - 1] === 'G' ||
      env.lakeMap!.desc[s.row][s.col + 1] === 'G'
    )
      continue;
    env.step(ans('Down'));
    const t = env.position;
    if (t.row === s.row + 1) counts.Down++;
    else if (t.col === s.col - 1) counts.Left++;
    else if (t.col === s.col + 1) counts.Right++;
    else assert.fail('Down may not move Up');
    n++;
  }
  for (const [k, c] of Object.entries(counts)) {
    assert.ok(Math.abs(c / n - 1 / 3) < 0.015, `${k}: ${c}/${n}`); // ~5.5 sigma
  }
});

test('success_rate 1 makes slippery deterministic; renderLake symbols', () => {
  const env = new FrozenLakeEnv({ is_slippery: true, success_rate: 1 }, { envId: 1 });
  env.reset(0);
  assert.equal(env.step(ans('Left')).observation, '___G\n_O__\nP_O_\nOO__');
  const map = { size: 2, desc: ['SH', 'FG'], start: { row: 0, col: 0 }, goal: { row: 1, col: 1 } };
  assert.equal(renderLake(map, { row: 0, col: 1 }), '_X\n_G');
  assert.equal(renderLake(map, { row: 1, col: 1 }), '_O\n_√');
});

test('golden 6x6 (seed 0): first observation, then wall, invalid answer, valid move, hole', () => {
  const env = new FrozenLakeEnv({ size: 6, is_slippery: false, format_penalty: -0.01 });
  const first = env.reset(0);
  // P at row 1, col 5 (the right edge); holes O; goal G at row 5, col 2.
  assert.equal(first.observation, ['_____O', '____OP', 'OO____', '_O____', 'O__O_O', 'O_GO_O'].join('\n'));
  assert.deepEqual(env.lakeMap!.desc, ['FFFFFH', 'FFFFHS', 'HHFFFF', 'FHFFFF', 'HFFHFH', 'HFGHFH']);
  const step = (text: string) => {
    const r = env.step(text);
    return [r.reward, r.terminated, r.info.action_is_valid, r.info.action_is_effective, r.info.format_penalty, r.info.success];
  };
  // Right from the right edge: a valid action that does not move the player (gymnasium clamps).
  assert.deepEqual(step(ans('Right')), [0, false, true, false, 0, false]);
  // No answer tags: state unchanged, reward = format_penalty -0.01.
  assert.deepEqual(step('I go right'), [-0.01, false, false, false, -0.01, false]);
  assert.equal(env.render(), first.observation);
  // Down to row 2, col 5 (frozen), then Up twice: back to row 1, then row 0, col 5 = a hole (X).
  assert.deepEqual(step(ans('Down')), [0, false, true, true, 0, false]);
  assert.deepEqual(step(ans('up')), [0, false, true, true, 0, false]);
  assert.deepEqual(step(ans('Up')), [0, true, true, true, 0, false]);
  assert.equal(env.render().split('\n')[0], '_____X');
  assert.equal(env.solve(), null); // in a hole: no plan
});

test('solve: BFS plan from the current cell; null when slippery; [] on the goal', () => {
  const env = new FrozenLakeEnv({ size: 6, is_slippery: false });
  assert.throws(() => env.solve(), /reset/);
  env.reset(0);
  // From row 1, col 5 to the goal at row 5, col 2: Down, 3x Left, 3x Down (7 moves; Manhattan 4 + 3 = 7).
  assert.deepEqual(env.solve(), ['Down', 'Left', 'Left', 'Left', 'Down', 'Down', 'Down']);
  env.step(ans('Down'));
  assert.deepEqual(env.solve(), ['Left', 'Left', 'Left', 'Down', 'Down', 'Down']);
  for (const a of env.solve()!) env.step(ans(a));
  assert.deepEqual(env.solve(), []);
  const slip = new FrozenLakeEnv({ is_slippery: true });
  slip.reset(0);
  assert.equal(slip.solve(), null);
  const sure = new FrozenLakeEnv({ is_slippery: true, success_rate: 1 });
  sure.reset(0);
  // Seed 0 4x4 (see the first test): P at row 2, col 1; holes right of and above it; G at row 0, col 3.
  // The only 6-move path goes Left, up the left column and along the top row.
  assert.deepEqual(sure.solve(), ['Left', 'Up', 'Up', 'Right', 'Right', 'Right']);
});

test('the solver path replayed earns reward 1 and success (4x4, 6x6, 8x8; 300 seeds each)', () => {
  for (const size of [4, 6, 8]) {
    const env = new FrozenLakeEnv({ size, is_slippery: false });
    for (let seed = 0; seed < 300; seed++) {
      env.reset(seed);
      const path = env.solve();
      assert.ok(path !== null && path.length >= 1, `size ${size} seed ${seed}: no path`);
      const results = path.map((a) => env.step(ans(a)));
      const last = results[results.length - 1];
      assert.deepEqual([last.reward, last.terminated, last.info.success], [1, true, true], `size ${size} seed ${seed}`);
      assert.ok(results.slice(0, -1).every((r) => r.reward === 0 && !r.terminated && r.info.action_is_effective));
    }
  }
});
