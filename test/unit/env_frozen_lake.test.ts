import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FrozenLakeEnv, frozenLakeInstruction, renderLake } from '../../src/envs/frozen_lake';
import { generateMap, shortestPath } from '../../src/envs/frozen_lake_map';
import { Rng } from '../../src/util/rng';

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
  let last = '';
  for (const a of script) {
    const r = env.step(a === 'nothing' ? 'no tags here' : ans(a));
    rewards.push(r.reward); done.push(r.terminated); valid.push(r.info.action_is_valid);
    effective.push(r.info.action_is_effective); last = r.observation;
    if (a === 'nothing') assert.equal(r.observation, '___G\n_O__\n_PO_\nOO__');
    if (a === 'Left') assert.equal(r.observation, '___G\n_O__\nP_O_\nOO__');
  }
  assert.deepEqual(rewards, [-0.01, 0, 0, 0, 0, 0, 0, 1]);
  assert.deepEqual(done, [false, false, false, false, false, false, false, true]);
  assert.deepEqual(valid, [false, true, true, true, true, true, true, true]);
  assert.deepEqual(effective, [false, true, true, true, false, true, true, true]);
  assert.equal(last, '___√\n_O__\n__O_\nOO__');
  assert.equal(env.render(), last);
  assert.throws(() => env.step(ans('Left')), /terminated/);
});

test('falling in a hole: X, reward 0, terminated, not success', () => {
  const env = new FrozenLakeEnv({ is_slippery: false });
  env.reset(0);
  const r = env.step(ans('Down'));
  assert.deepEqual(r, {
    observation: '___G\n_O__\n__O_\nOX__', reward: 0, terminated: true,
    info: { success: false, action_is_valid: true, action_is_effective: true, format_penalty: 0 },
  });
});

test('slippery golden trajectory (seed 123, envId 0) is deterministic', () => {
  const run = (): string[] => {
    const env = new FrozenLakeEnv({ is_slippery: true }, { envId: 0 });
    env.reset(123);
    return ['Up', 'Up', 'Up', 'Up', 'Right', 'Right'].map((a) => env.step(ans(a)).observation);
  };
  const obs = run();
  assert.deepEqual(obs, [
    '____\n____\nG___\n_P__', '____\n____\nG___\n__P_', '____\n____\nG___\n___P',
    '____\n____\nG___\n___P', '____\n____\nG___\n___P', '____\n____\nG__P\n____',
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
    for (const row of m.desc) for (const ch of row) { if (ch === 'H') holes++; if (ch === 'H' || ch === 'F') cells++; }
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
    if (s.row > 2 || s.col < 1 || s.col > 2 || env.lakeMap!.desc[s.row + 1][s.col] === 'G'
      || env.lakeMap!.desc[s.row][s.col - 1] === 'G' || env.lakeMap!.desc[s.row][s.col + 1] === 'G') continue;
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
