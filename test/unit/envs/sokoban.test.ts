import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createEnv, validateEnvConfig } from '../../../src/envs/registry';
import {
  ALT_GRID_LOOKUP,
  parseSokobanConfig,
  renderSokoban,
  SOKOBAN_INSTRUCTION,
  SokobanEnv,
  sokobanInstruction,
} from '../../../src/envs/sokoban';
import { loadConfigFile } from '../../../src/preflight/load';
import '../../helpers/chaos_env'; // registers env type chaos
import type { SokobanState } from '../../../src/envs/sokoban_room';

const ans = (a: string): string => `<answer>${a}</answer><|im_end|>`;
/** ROLL's SokobanDifferentGridVocab entry (examples/config/traj_envs.yaml). */
const ALT_VOCAB = {
  search_depth: 30,
  dim_room: [6, 6],
  num_boxes: 1,
  grid_lookup: { 0: 'W', 1: '.', 2: 'G', 3: 'C', 4: 'B', 5: 'A', 6: '@' },
  grid_vocab: { W: 'wall', '.': 'empty', G: 'target', C: 'box on target', B: 'box', A: 'player', '@': 'player on target' },
};
const LARGER = { dim_room: [10, 10], num_boxes: 2, search_depth: 10, format_penalty: -0.15, max_steps: 30 };

test('golden first observations of SimpleSokoban (6x6, 1 box, search_depth 300)', () => {
  const env = new SokobanEnv({ dim_room: [6, 6], num_boxes: 1, format_penalty: -0.15, max_steps: 10 });
  const r0 = env.reset(0);
  assert.equal(r0.observation, '######\n###__#\n###PX#\n###_O#\n###__#\n######');
  assert.equal(
    r0.info.env_instruction,
    `${SOKOBAN_INSTRUCTION}\nThe meaning of each symbol in the state is:\n` +
      '#: wall, _: empty, O: target, √: box on target, X: box, P: player, S: player on target\n' +
      'Your available actions are:\nUp, Down, Left, Right',
  );
  assert.equal(env.reset(1).observation, '######\n#____#\n#__XP#\n#O___#\n######\n######');
  assert.equal(env.reset(2).observation, '######\n#O___#\n#__X_#\n###P_#\n####_#\n######');
  assert.equal(env.render(), '######\n#O___#\n#__X_#\n###P_#\n####_#\n######');
});

test('golden first observation of the alternative vocabulary (W . G C B A @, search_depth 30)', () => {
  const env = createEnv('sokoban', ALT_VOCAB);
  const r = env.reset(7);
  assert.equal(r.observation, 'WWWWWW\nW...GW\nW....W\nW.B.WW\nWA.WWW\nWWWWWW');
  assert.match(
    r.info.env_instruction,
    /\nThe meaning of each symbol in the state is:\nW: wall, \.: empty, G: target, C: box on target, B: box, A: player, @: player on target\n/,
  );
});

test('scripted LargerSokoban episode: invalid answer, blocked move, push on, push off, push on, solve', () => {
  const env = new SokobanEnv(LARGER);
  const first = env.reset(0).observation;
  assert.equal(
    first,
    [
      '##########',
      '##########',
      '##########',
      '##########',
      '#####_####',
      '####_____#',
      '####____##',
      '####__OX_#',
      '####_OXP_#',
      '##########',
    ].join('\n'),
  );
  const script = [
    'nothing',
    'Down',
    'Right',
    'Up',
    'Left',
    'Left',
    'Up',
    'Left',
    'Left',
    'Down',
    'Right',
    'Up',
    'Right',
    'Right',
    'Down',
    'Down',
    'Left',
  ];
  const rewards: number[] = [];
  const done: boolean[] = [];
  const valid: boolean[] = [];
  const effective: boolean[] = [];
  const penalties: number[] = [];
  const rows78: string[] = [];
  for (const a of script) {
    const r = env.step(a === 'nothing' ? 'I would go Up' : ans(a));
    rewards.push(r.reward);
    done.push(r.terminated);
    valid.push(r.info.action_is_valid);
    effective.push(r.info.action_is_effective);
    penalties.push(r.info.format_penalty as number);
    rows78.push(r.observation.split('\n').slice(7, 9).join('/'));
    assert.equal(r.info.success, r.terminated);
  }
  assert.deepEqual(rewards, [-0.25, -0.1, -0.1, -0.1, 0.9, -1.1, -0.1, -0.1, -0.1, -0.1, 0.9, -0.1, -0.1, -0.1, -0.1, -0.1, 10.9]);
  assert.deepEqual(done, [...Array(16).fill(false), true]);
  assert.deepEqual(valid, [false, ...Array(16).fill(true)]);
  assert.deepEqual(effective, [false, false, ...Array(15).fill(true)]);
  assert.deepEqual(penalties, [-0.15, ...Array(16).fill(0)]);
  assert.equal(rows78[4], '####__√P_#/####_OX__#'); // pushed onto a target
  assert.equal(rows78[5], '####_XS__#/####_OX__#'); // pushed off it; the player stands on the target
  assert.equal(rows78[10], '####_P√__#/####_OX__#'); // back on
  assert.equal(rows78[16], '####__√__#/####_√P__#'); // all placed
  assert.throws(() => env.step(ans('Up')), /terminated/);
});

test('a 1-box solve earns 11 - 0.1k: the BFS path replayed for seeds 0..199', () => {
  const env = new SokobanEnv({});
  for (let seed = 0; seed < 200; seed++) {
    env.reset(seed);
    const path = env.solve();
    assert.ok(path !== null && path.length > 0, `seed ${seed}: no solution`);
    let total = 0;
    path.forEach((a, i) => {
      const r = env.step(ans(a));
      total += r.reward;
      assert.equal(r.terminated, i === path.length - 1, `seed ${seed} step ${i}`);
      assert.equal(r.info.success, i === path.length - 1);
    });
    assert.ok(Math.abs(total - (11 - 0.1 * path.length)) < 1e-9, `seed ${seed}: ${total} for ${path.length} steps`);
    assert.deepEqual(env.solve(), []);
  }
});

test('LargerSokoban: the BFS path solves seeds 0..49', () => {
  const env = new SokobanEnv(LARGER);
  for (let seed = 0; seed < 50; seed++) {
    env.reset(seed);
    const path = env.solve()!;
    let last = null;
    for (const a of path) last = env.step(ans(a));
    assert.equal(last?.info.success, true, `seed ${seed}`);
    assert.equal(last?.terminated, true);
  }
});

test('max_steps ends the episode (truncated) and counts invalid answers; think pattern parses', () => {
  const env = new SokobanEnv({ max_steps: 2, format_penalty: -0.15 }, { enableThink: true });
  assert.throws(() => env.step(ans('Up')), /reset/);
  assert.throws(() => env.render(), /reset/);
  assert.throws(() => env.reset(-1), /seed/);
  env.reset(0); // ###PX# with the target below the box: Up is a plain move
  const a = env.step(ans('Up')); // no <think>: invalid under the think pattern
  assert.deepEqual([a.reward, a.terminated, a.info.action_is_valid], [-0.25, false, false]);
  const b = env.step('<think>go up</think><answer>Up</answer>');
  assert.deepEqual([b.reward, b.terminated, b.info.action_is_valid, b.info.truncated, b.info.success], [-0.1, true, true, true, false]);
});

test('same seed, same room (fresh instances); other seeds differ', () => {
  const a = new SokobanEnv(LARGER);
  const b = new SokobanEnv(LARGER);
  for (const seed of [3, 99, 123_456]) {
    assert.equal(a.reset(seed).observation, b.reset(seed).observation);
    assert.deepEqual(a.sokobanState, b.sokobanState);
  }
  const rooms = new Set<string>();
  for (let seed = 0; seed < 20; seed++) rooms.add(a.reset(seed).observation);
  assert.ok(rooms.size >= 18, `${rooms.size} distinct rooms of 20`);
});

test('renderSokoban: every symbol, default and alternative vocabulary', () => {
  // 3x6: wall, box on target, box, target, player on target (row 1); the player is on cell 10.
  const state: SokobanState = {
    rows: 3,
    cols: 6,
    player: 10,
    fixed: Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 2, 1, 2, 2, 0, 0, 0, 0, 0, 0, 0]),
    boxes: Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
  };
  assert.equal(renderSokoban(state), '######\n#√XOS#\n######');
  assert.equal(renderSokoban(state, ALT_GRID_LOOKUP), 'WWWWWW\nWCBG@W\nWWWWWW');
  state.player = 8;
  state.boxes[8] = 0;
  state.fixed[8] = 1;
  assert.equal(renderSokoban(state), '######\n#√POO#\n######');
});

test('config: defaults, ROLL/RAGEN key forms, errors name key, value and allowed range', () => {
  const d = parseSokobanConfig(undefined);
  assert.deepEqual(
    [d.dim_room, d.num_boxes, d.max_steps, d.search_depth, d.format_penalty, d.env_instruction],
    [[6, 6], 1, 100, 300, 0, null],
  );
  assert.deepEqual(parseSokobanConfig({ dim_x: 8, dim_y: 7 }).dim_room, [8, 7]);
  assert.deepEqual(parseSokobanConfig({ dim_x: 8, dim_y: 7, dim_room: [8, 7] }).dim_room, [8, 7]);
  assert.deepEqual(parseSokobanConfig(ALT_VOCAB).grid_lookup, ALT_GRID_LOOKUP);
  assert.deepEqual(parseSokobanConfig({ grid_lookup: ALT_VOCAB.grid_lookup }).grid_vocab[1], ['.', 'empty']);
  const ok = parseSokobanConfig({ action_pattern: '<answer>(.*?)</answer>', render_mode: 'text', env_instruction: 'Push.' });
  assert.equal(ok.env_instruction, 'Push.');
  assert.equal(parseSokobanConfig({ env_instruction: null }).env_instruction, null);
  assert.match(sokobanInstruction(parseSokobanConfig({ env_instruction: '' })), /^\nThe meaning of each symbol/);
  const where = /^env_config of sokoban: /;
  const bad: Array<[Record<string, unknown>, RegExp]> = [
    [{ num_box: 2 }, /unknown key "num_box" \(did you mean "num_boxes"\?\); allowed keys: dim_x, dim_y, dim_room, /],
    [{ dim_room: [6, 2] }, /dim_room\[1\] must be an integer in \[3, 64\], got 2/],
    [{ dim_room: 6 }, /dim_room must be \[rows, cols\], two integers in \[3, 64\], got 6/],
    [{ dim_x: 6 }, /give dim_x \(rows\) and dim_y \(cols\) together, got dim_x 6 and dim_y \(missing\)/],
    [{ dim_x: 6, dim_y: 8, dim_room: [6, 6] }, /dim_x\/dim_y \[6,8\] disagree with dim_room \[6,6\]/],
    [{ dim_room: [3, 4] }, /dim_room \[3,4\] has 2 interior cells; a room needs at least 3/],
    [{ num_boxes: 15 }, /num_boxes must be an integer in \[1, 14\], got 15/],
    [{ num_boxes: 0 }, /num_boxes must be an integer in \[1, 14\], got 0/],
    [{ search_depth: 1 }, /search_depth must be an integer in \[2, 1000\], got 1/],
    [{ max_steps: 0 }, /max_steps must be an integer in \[1, 1000000\], got 0/],
    [{ format_penalty: 'x' }, /format_penalty must be a finite number, got "x"/],
    [{ render_mode: 'rgb_array' }, /render_mode must be "text", got "rgb_array"/],
    [{ action_pattern: '(' }, /action_pattern must be a regular expression, got "\("/],
    [{ grid_lookup: ['W'] }, /grid_lookup must be a mapping of the codes 0\.\.6 to one distinct character each .*, got \["W"\]/],
    [{ grid_lookup: { ...ALT_VOCAB.grid_lookup, 6: undefined, 7: 'x' } }, /grid_lookup must be .*; key 7 is not a code/],
    [{ grid_lookup: { 0: 'W', 1: '.', 2: 'G', 3: 'C', 4: 'B', 5: 'A' } }, /grid_lookup must be .*; key 6 is missing/],
    [{ grid_lookup: { ...ALT_VOCAB.grid_lookup, 6: 'A' } }, /grid_lookup must be .*; code 6 has "A"/],
    [{ grid_lookup: { ...ALT_VOCAB.grid_lookup, 1: '..' } }, /grid_lookup must be .*; code 1 has "\.\."/],
    [
      { grid_vocab: ALT_VOCAB.grid_vocab },
      /grid_vocab must be a mapping of each grid_lookup symbol \(# _ O √ X P S\) to its meaning; "W" is not a grid_lookup symbol/,
    ],
    [{ grid_lookup: ALT_VOCAB.grid_lookup, grid_vocab: { W: 'wall' } }, /grid_vocab must be .*; "\." is missing/],
    [{ grid_vocab: { '#': '', _: 'e', O: 't', '√': 'b', X: 'x', P: 'p', S: 's' } }, /grid_vocab must be .*; "#" has ""/],
  ];
  for (const [raw, re] of bad) {
    assert.throws(
      () => parseSokobanConfig(raw),
      (e: Error) => where.test(e.message) && re.test(e.message),
      JSON.stringify(raw),
    );
  }
  assert.throws(() => createEnv('sokoban', { num_boxes: 15 }), /num_boxes/);
});

test("the Sokoban variants of configs/config/traj_envs.yaml (ROLL's three) resolve to valid env_configs", () => {
  const tags = ['SimpleSokoban', 'LargerSokoban', 'SokobanDifferentGridVocab'];
  const { config } = loadConfigFile(
    'configs/examples/agent_val_frozen_lake.yaml',
    tags.map((tag) => `++custom_envs.${tag}=\${custom_env.${tag}}`),
  );
  const parsed = tags.map((tag) => {
    const entry = config.custom_envs[tag];
    assert.equal(entry.env_type, 'sokoban');
    return parseSokobanConfig(entry.env_config);
  });
  assert.deepEqual(
    parsed.map((c) => [c.dim_room, c.num_boxes, c.search_depth, c.format_penalty, c.max_steps]),
    [
      [[6, 6], 1, 300, -0.15, 10],
      [[10, 10], 2, 10, -0.15, 10],
      [[6, 6], 1, 30, -0.15, 10],
    ],
  );
  assert.match(parsed[0].env_instruction!, /^You are solving the Sokoban puzzle\./);
  assert.equal(
    createEnv('sokoban', config.custom_envs.SokobanDifferentGridVocab.env_config).reset(7).observation,
    'WWWWWW\nW...GW\nW....W\nW.B.WW\nWA.WWW\nWWWWWW',
  );
});

test('config validation resets once: a room too small for its boxes fails at config check', () => {
  assert.throws(
    () => validateEnvConfig('sokoban', { dim_x: 6, dim_y: 6, num_boxes: 7 }),
    /no 6x6 room with 7 boxes after 1000 retries for seed 0/,
  );
  assert.doesNotThrow(() => validateEnvConfig('sokoban', { dim_x: 6, dim_y: 6, num_boxes: 1 }));
  // a chaos env made without an env id (as validation makes it) never faults
  assert.doesNotThrow(() => validateEnvConfig('chaos', { inner_env_type: 'frozen_lake', throw_on_reset: true }));
});
