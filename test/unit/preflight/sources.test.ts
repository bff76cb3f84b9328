/**
 * Where a config value came from: interpolation variables only when something refers to them, unknown
 * keys named with the file or command-line argument that set them, and errors that read as such.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { loadConfigFile } from '../../../src/preflight/load';
import { configErrorOf } from '../../helpers/config_error';

const QUICKSTART = resolve('configs/frozen_lake');
const EXAMPLE = 'configs/examples/agent_val_frozen_lake.yaml';

/** Writes files (name -> text) into a fresh temp dir; returns name -> absolute path. */
function files(spec: Record<string, string>): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-src-'));
  return Object.fromEntries(
    Object.entries(spec).map(([name, text]) => {
      writeFileSync(join(dir, name), text);
      return [name, join(dir, name)];
    }),
  );
}

test('a top-level typo in an included file is an unknown key naming that file, with one allowed list', () => {
  const f = files({
    'parent.yaml': `defaults:\n  - ${QUICKSTART}\nsead: 42\nadv_estimater: gae\n`,
    'child.yaml': 'defaults: [parent]\nexp_name: child\n',
  });
  const err = configErrorOf(() => loadConfigFile(f['child.yaml']));
  assert.equal(err.problems.length, 2, err.message);
  assert.equal(err.problems[0], `unknown key \`sead\` (from ${f['parent.yaml']}); did you mean \`seed\`?`);
  assert.ok(
    err.problems[1].startsWith(
      `unknown key \`adv_estimater\` (from ${f['parent.yaml']}); did you mean \`adv_estimator\`? (allowed at the top level: exp_name, seed, max_steps, `,
    ),
    err.problems[1],
  );
  assert.ok(err.message.startsWith(`${f['child.yaml']}: invalid config\n`), err.message);
});

test('a top-level key of the loaded file is a variable when a ${...} refers to it (OmegaConf)', () => {
  const f = files({
    'main.yaml': `defaults:\n  - ${QUICKSTART}\nmy_lr: 3.0e-4\nactor_train:\n  training_args:\n    learning_rate: \${my_lr}\n`,
  });
  const loaded = loadConfigFile(f['main.yaml']);
  assert.equal(loaded.config.actor_train.training_args.learning_rate, 3e-4);
  assert.deepEqual(loaded.variables, [{ file: f['main.yaml'], keys: ['my_lr'] }]);
});

test('a reference from the command line or through a path under the key counts; an escaped one does not', () => {
  const f = files({ 'main.yaml': `defaults:\n  - ${QUICKSTART}\nlimits: {steps: 7}\n` });
  const loaded = loadConfigFile(f['main.yaml'], ['max_steps=${limits.steps}', '+note=1', 'seed=${note}']);
  assert.deepEqual([loaded.config.max_steps, loaded.config.seed], [7, 1]);
  assert.deepEqual(loaded.variables, [
    { file: f['main.yaml'], keys: ['limits'] },
    { file: 'command line', keys: ['note'] },
  ]);
  const g = files({ 'main.yaml': `defaults:\n  - ${QUICKSTART}\nnote: 3\nexp_name: '\\\${note}'\n` });
  const err = configErrorOf(() => loadConfigFile(g['main.yaml']));
  assert.equal(err.problems.length, 1, err.message);
  assert.ok(err.problems[0].startsWith('unknown key `note` (allowed at the top level: exp_name, '), err.problems[0]);
  assert.equal(loadConfigFile(g['main.yaml'], ['seed=${note}']).config.exp_name, '${note}');
});

test('errors caused by a command-line override name the argument and the command line as the source', () => {
  const cli = configErrorOf(() => loadConfigFile('configs/frozen_lake.yaml', ['seed=abc', '+sead=1']));
  assert.ok(cli.message.startsWith('command line: invalid config\n'), cli.message);
  assert.deepEqual(
    cli.problems.map((p) => p.replace(/ \(allowed at the top level: .*\)$/, '')),
    [
      '`seed` (from `seed=abc` on the command line): Invalid input: expected number, received string (got "abc")',
      'unknown key `sead` (from `+sead=1` on the command line); did you mean `seed`?',
    ],
  );
  const f = files({ 'main.yaml': `defaults:\n  - ${QUICKSTART}\nmax_steps: ten\n` });
  const mixed = configErrorOf(() => loadConfigFile(f['main.yaml'], ['seed=abc']));
  assert.equal(
    mixed.message,
    `${f['main.yaml']}: invalid config\n` +
      '  - `seed` (from `seed=abc` on the command line): Invalid input: expected number, received string (got "abc")\n' +
      '  - `max_steps`: Invalid input: expected number, received string (got "ten")',
  );
  const interp = configErrorOf(() => loadConfigFile('configs/frozen_lake.yaml', ['seed=${nope}']));
  assert.equal(
    interp.message,
    'command line: invalid config\n  - `seed` (from `seed=${nope}` on the command line): `${nope}` cannot be resolved: no key `nope` at the top level',
  );
});

test('overriding a key under an interpolated mapping says which path to override instead', () => {
  const err = configErrorOf(() => loadConfigFile(EXAMPLE, ['custom_envs.FrozenLake.max_steps=5']));
  assert.equal(
    err.message,
    'command line: invalid config\n  - `custom_envs.FrozenLake.max_steps=5`: `custom_envs.FrozenLake` is the interpolation ' +
      '`${custom_env.FrozenLake}`; override the referenced path instead: custom_env.FrozenLake.max_steps=5',
  );
  assert.equal(loadConfigFile(EXAMPLE, ['custom_env.FrozenLake.max_steps=5']).config.custom_envs.FrozenLake.max_steps, 5);
});

test('a missing required block names what it holds', () => {
  const f = files({ 'bare.yaml': 'val_env_manager: {tags: [A], num_groups_partition: [128]}\ncustom_envs: {A: {}}\n' });
  assert.deepEqual(configErrorOf(() => loadConfigFile(f['bare.yaml'])).problems, [
    '`train_env_manager` is required (a mapping with num_env_groups, group_size, group_size_redundancy, fixed_states, tags, ' +
      'num_groups_partition, max_env_num_per_worker, generating_args)',
    '`custom_envs.A.env_type` is required (a string)',
  ]);
});

test('a relative pretrain reached through a ${...} reference resolves against the file that wrote the variable', () => {
  const vars = files({ 'vars.yaml': 'model_dir: no_such_model\n' })['vars.yaml'];
  const main = files({ 'main.yaml': `defaults:\n  - ${QUICKSTART}\n  - ${vars.replace(/\.yaml$/, '')}\npretrain: \${model_dir}\n` })[
    'main.yaml'
  ];
  const err = configErrorOf(() => loadConfigFile(main));
  const expected = join(vars, '..', 'no_such_model');
  assert.ok(
    err.problems.some((p) => p.startsWith(`\`pretrain\` (interpolated from \`model_dir\`, from ${vars}): ${expected} is not a folder`)),
    err.message,
  );
});
