/** A sweep's definition from a config, --seeds and --grid: child ids, configs, start order, and the errors before anything starts. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from 'commander';
import { runInputFromFile } from '../../../src/cli/run_input';
import { gridArgument, gridPoints, sweepShape, sweepSpecFromFile } from '../../../src/cli/sweep_spec';
import { ConfigError } from '../../../src/contract';

const CONFIG = 'test/fixtures/tiny_frozen_lake.yaml';
const LR = 'actor_train.training_args.learning_rate';

test('--grid parses key=v1,v2 and accumulates axes; bad forms, a repeated key and the seed are usage errors naming the value', () => {
  const axes = gridArgument('eval_steps=1,2', gridArgument(`${LR}=1e-4, 3e-4`));
  assert.deepEqual(axes, [
    { key: LR, values: ['1e-4', '3e-4'] },
    { key: 'eval_steps', values: ['1', '2'] },
  ]);
  for (const bad of ['lr', '=1,2', 'lr=', 'lr=1,,2']) {
    assert.throws(
      () => gridArgument(bad),
      (e: Error) => e instanceof InvalidArgumentError && e.message.includes(JSON.stringify(bad)),
    );
  }
  assert.throws(() => gridArgument('eval_steps=3', axes), /grid key "eval_steps" is given twice/);
  assert.throws(() => gridArgument('seed=1,2'), /use --seeds N/);
  assert.throws(() => gridArgument('max_steps=5, 5'), /grid key "max_steps" lists "5" twice/);
});

test('grid points are every combination, the first axis slowest; no axes is one empty point', () => {
  assert.deepEqual(gridPoints([]), [{}]);
  assert.deepEqual(
    gridPoints([
      { key: 'a', values: ['1', '2'] },
      { key: 'b', values: ['x', 'y', 'z'] },
    ]).map((p) => `${p.a}${p.b}`),
    ['1x', '1y', '1z', '2x', '2y', '2z'],
  );
});

test('children: seed-major order, deterministic ids, each config the one `starpo train` makes of the same overrides and seed', () => {
  const grid = gridArgument(`${LR}=1e-4,3e-4`);
  const spec = sweepSpecFromFile(CONFIG, ['max_steps=3'], { seeds: 3, grid, parallel: 2, sweepId: 'sw' });
  assert.deepEqual(spec.seeds, [7, 8, 9], "the config's seed, then the next integers");
  assert.deepEqual(
    spec.children.map((c) => c.run.runId),
    ['sw-g0-seed7', 'sw-g1-seed7', 'sw-g0-seed8', 'sw-g1-seed8', 'sw-g0-seed9', 'sw-g1-seed9'],
  );
  for (const c of spec.children) {
    const solo = runInputFromFile(CONFIG, c.run.runId, ['max_steps=3', `${LR}=${spec.points[c.point][LR]}`, `seed=${c.seed}`]).input;
    assert.deepEqual(c.run, solo);
    assert.equal(c.run.config.max_steps, 3);
  }
  assert.equal(spec.children[1].run.config.actor_train.training_args.learning_rate, 3e-4);
  assert.equal(spec.configName, 'tiny_frozen_lake');
  assert.deepEqual(spec.overrides, ['max_steps=3']);
  const plain = sweepSpecFromFile(CONFIG, [], { seeds: 2, grid: [], parallel: 1, sweepId: 'sw' });
  assert.deepEqual(
    plain.children.map((c) => c.run.runId),
    ['sw-seed7', 'sw-seed8'],
  );
  assert.deepEqual(plain.points, [{}]);
});

test('a grid value the config refuses names the grid point, the key and the value, before anything starts', () => {
  const grid = gridArgument('eval_steps=1,-4');
  assert.throws(
    () => sweepSpecFromFile(CONFIG, [], { seeds: 1, grid, parallel: 1, sweepId: 'sw' }),
    (e: Error) =>
      e instanceof ConfigError && /at grid point eval_steps=-4 seed=7/.test(e.message) && /eval_steps/.test(e.problems.join('\n')),
  );
});

test('a command-line override of a --grid key is refused, naming the argument', () => {
  assert.throws(
    () => sweepSpecFromFile(CONFIG, ['max_steps=9', `++${LR}=1e-3`], { seeds: 1, grid: gridArgument(`${LR}=1e-4,3e-4`), parallel: 1 }),
    (e: Error) =>
      e instanceof ConfigError &&
      e.problems.length === 1 &&
      e.problems[0] === `\`++${LR}=1e-3\`: its key is also a --grid axis, whose values would replace it; give the key one way`,
  );
});

test('a sweep id that makes child run ids too long is refused, naming --sweep-id', () => {
  assert.throws(
    () => sweepSpecFromFile(CONFIG, [], { seeds: 1, grid: [], parallel: 1, sweepId: 'x'.repeat(125) }),
    (e: Error) => e instanceof ConfigError && e.message.startsWith('--sweep-id') && e.problems[0].includes('child run id'),
  );
});

test('a sweep shape counts in the singular for one and the plural otherwise', () => {
  assert.equal(sweepShape({ children: [{}], points: [{}], seeds: [1] } as never), '1 run, 1 grid point x 1 seed');
  assert.equal(sweepShape({ children: [{}, {}, {}, {}], points: [{}, {}], seeds: [1, 2] } as never), '4 runs, 2 grid points x 2 seeds');
});
