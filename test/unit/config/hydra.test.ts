/** Hydra-style config files: defaults lists, OmegaConf interpolation, command-line overrides. */

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { composeFile } from '../../../src/config/hydra';
import { resolveInterpolations } from '../../../src/config/interpolate';
import { originFinder } from '../../../src/config/origins';
import { applyOverrides, parseOverrides } from '../../../src/config/overrides';
import { ConfigError } from '../../../src/contract';

/** Writes files (relative path -> text) into a fresh temp dir; returns its path. */
function files(spec: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'starpo-hydra-'));
  for (const [rel, text] of Object.entries(spec)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

function configErrorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message;
  }
  assert.fail('expected a ConfigError');
}

const resolve = (tree: Record<string, unknown>) => resolveInterpolations(tree, { source: 'test.yaml' }).tree;
const override = (tree: Record<string, unknown>, args: string[]) => applyOverrides(tree, parseOverrides(args));

test("defaults: the file's own keys override included ones (_self_ last); mappings merge, lists replace", () => {
  const dir = files({
    'config/base.yaml': 'a: 1\nb: {x: 1, y: 2}\nl: [1, 2]\nonly_base: true\n',
    'exp/main.yaml': 'defaults:\n  - ../config/base@_here_\na: 2\nb: {y: 3}\nl: [9]\n',
  });
  const { tree, layers } = composeFile(join(dir, 'exp/main.yaml'));
  assert.deepEqual(tree, { a: 2, b: { x: 1, y: 3 }, l: [9], only_base: true });
  assert.deepEqual(layers, [
    { file: join(dir, 'config/base.yaml'), tree: { a: 1, b: { x: 1, y: 2 }, l: [1, 2], only_base: true } },
    { file: join(dir, 'exp/main.yaml'), tree: { a: 2, b: { y: 3 }, l: [9] } },
  ]);
});

test('defaults: _self_ first lets the included file win; plain entries and .yaml names work; nesting recurses', () => {
  const dir = files({
    'base.yaml': 'defaults:\n  - sub/inner\na: base\n',
    'sub/inner.yaml': 'a: inner\ninner_only: 1\n',
    'self_first.yaml': 'defaults:\n  - _self_\n  - base.yaml\na: main\nmine: 2\n',
  });
  const { tree, layers } = composeFile(join(dir, 'self_first.yaml'));
  assert.deepEqual(tree, { a: 'base', mine: 2, inner_only: 1 });
  assert.deepEqual(
    layers.map((l) => l.file),
    [join(dir, 'self_first.yaml'), join(dir, 'sub/inner.yaml'), join(dir, 'base.yaml')],
  );
});

test('defaults: a missing file names the entry and the resolved path', () => {
  const dir = files({ 'main.yaml': 'defaults:\n  - ../config/nope@_here_\nseed: 1\n' });
  const msg = configErrorOf(() => composeFile(join(dir, 'main.yaml')));
  assert.match(msg, /main\.yaml: invalid config/);
  assert.ok(msg.includes(`\`defaults[0]\`: "../config/nope@_here_": no such file ${join(dir, '../config/nope.yaml')}`), msg);
});

test('defaults: a cycle is an error naming the chain; unsupported entries are named', () => {
  const dir = files({ 'a.yaml': 'defaults: [b]\nx: 1\n', 'b.yaml': 'defaults: [a]\ny: 1\n', 'g.yaml': 'defaults:\n  - db: mysql\n' });
  const msg = configErrorOf(() => composeFile(join(dir, 'a.yaml')));
  assert.ok(msg.includes(`defaults cycle: ${join(dir, 'a.yaml')} -> ${join(dir, 'b.yaml')} -> ${join(dir, 'a.yaml')}`), msg);
  assert.match(
    configErrorOf(() => composeFile(join(dir, 'g.yaml'))),
    /`defaults\[0\]`: \{"db":"mysql"\}: only file entries are supported \(`path`, `path@_here_`, `_self_`\)/,
  );
});

test('interpolation: typed single references, string substitution, whole mappings, chains, nesting, escapes', () => {
  const out = resolve({
    n: 64,
    flag: false,
    name: 'lake',
    env: { FrozenLake: { max_tokens_per_step: '${n}', path: 'runs/${name}/${n}', slip: '${flag}' } },
    custom_envs: { FrozenLake: '${env.FrozenLake}' },
    chain_a: '${chain_b}',
    chain_b: '${n}',
    pick: 'name',
    nested: '${${pick}}',
    literal: '\\${n} costs ${n}',
    braces: 'Turn {turn_idx}: {observation}',
    list: ['${n}', { k: '${name}' }],
  });
  assert.deepEqual(out.custom_envs, { FrozenLake: { max_tokens_per_step: 64, path: 'runs/lake/64', slip: false } });
  assert.equal(out.chain_a, 64);
  assert.equal(out.nested, 'lake');
  assert.equal(out.literal, '${n} costs 64');
  assert.equal(out.braces, 'Turn {turn_idx}: {observation}');
  assert.deepEqual(out.list, [64, { k: 'lake' }]);
});

test('interpolation: a reference through another reference resolves', () => {
  const out = resolve({ base: { a: { v: 1, lit: '\\${v}' } }, alias: '${base.a}', use: '${alias.v}', lit: '${alias.lit}' });
  assert.equal(out.use, 1);
  assert.equal(out.lit, '${v}', 'an escaped value stays literal when reached through a reference');
});

test('interpolation: an unresolved key names the key holding it, the missing path and the nearest key', () => {
  const msg = configErrorOf(() => resolve({ note: { x: 1 }, custom_envs: { FrozenLake: { max_steps: '${nope.x}' } } }));
  assert.match(
    msg,
    /`custom_envs\.FrozenLake\.max_steps`: `\$\{nope\.x\}` cannot be resolved: no key `nope` at the top level; did you mean `note`\?/,
  );
  const deeper = configErrorOf(() => resolve({ custom_env: { FrozenLake: { max_steps: 3 } }, a: 'x${custom_env.FrozenLak.max_steps}' }));
  assert.match(
    deeper,
    /`a`: `\$\{custom_env\.FrozenLak\.max_steps\}` cannot be resolved: no key `FrozenLak` under `custom_env`; did you mean `FrozenLake`\?/,
  );
});

test('interpolation: the defaults file that set a key last is named, the loaded file is not', () => {
  const layers = [
    { file: 'config/env.yaml', tree: { v: '${missing}', w: 1 } },
    { file: 'main.yaml', tree: { w: '${missing}' } },
  ];
  const originOf = originFinder(layers, {}, []);
  const msg = configErrorOf(() => resolveInterpolations({ v: '${missing}' }, { source: 'main.yaml', originOf }));
  assert.match(
    msg,
    /^main\.yaml: invalid config\n {2}- `v` \(from config\/env\.yaml\): `\$\{missing\}` cannot be resolved: no key `missing` at the top level/,
  );
  assert.match(
    configErrorOf(() => resolveInterpolations({ w: '${missing}' }, { source: 'main.yaml', originOf })),
    /- `w`: `\$\{missing\}`/,
  );
});

test('interpolation: the top-level keys referred to are reported, escaped references are not', () => {
  const { referenced } = resolveInterpolations(
    { a: { b: 1 }, c: '${a.b}', d: '\\${e}', e: 2, f: '${${g}}', g: 'h', h: 3 },
    { source: 'test.yaml' },
  );
  assert.deepEqual([...referenced].sort(), ['a', 'g', 'h']);
});

test('interpolation: cycles, resolvers and unterminated references are errors', () => {
  assert.match(
    configErrorOf(() => resolve({ a: '${b}', b: '${c}', c: '${a}' })),
    /`a`: interpolation cycle: a -> b -> c -> a/,
  );
  assert.match(
    configErrorOf(() => resolve({ a: { b: '${a}' } })),
    /`a\.b`: interpolation cycle: a\.b -> a\.b/,
  );
  assert.match(
    configErrorOf(() => resolve({ home: '${oc.env:HOME}' })),
    /`home`: `\$\{oc\.env:HOME\}`: resolvers are not supported \(only `\$\{path\.to\.key\}` references\)/,
  );
  assert.match(
    configErrorOf(() => resolve({ a: 'x ${b' })),
    /`a`: "x \$\{b": unterminated interpolation/,
  );
  assert.match(
    configErrorOf(() => resolve({ m: { k: 1 }, a: 'x ${m}' })),
    /`a`: `\$\{m\}` is a mapping; it can only be used as the whole value, not inside "x \$\{m\}"/,
  );
});

test('interpolation: the hydra block is left to Hydra (its own resolvers)', () => {
  const out = resolve({ hydra: { run: { dir: 'outputs/${now:%Y-%m-%d}' } }, a: 1 });
  assert.deepEqual(out.hydra, { run: { dir: 'outputs/${now:%Y-%m-%d}' } });
});

test('overrides: dotted paths, YAML values, + and ++ like Hydra', () => {
  const tree = { a: { b: 1 }, seed: 42, tags: ['X'] };
  const out = override(tree, [
    'a.b=3',
    'seed=7',
    'tags=[FrozenLake, Bandit]',
    '+a.c=x',
    '++seed=8',
    'new.deep=true',
    'empty=',
    'ref=${a.b}',
  ]);
  assert.deepEqual(out, { a: { b: 3, c: 'x' }, seed: 8, tags: ['FrozenLake', 'Bandit'], new: { deep: true }, empty: '', ref: '${a.b}' });
  assert.deepEqual(tree, { a: { b: 1 }, seed: 42, tags: ['X'] }, 'the input is not modified');
});

test('overrides: a mapping value merges into the mapping there (Hydra: OmegaConf.update with merge=True)', () => {
  const tree = { env: { size: 4, is_slippery: false, inner: { p: 0.8, q: 1 } }, tags: ['X'] };
  const out = override(tree, ['env={size: 5, inner: {p: 0.9}}', 'tags={a: 1}', 'fresh={k: 1}']);
  assert.deepEqual(out, { env: { size: 5, is_slippery: false, inner: { p: 0.9, q: 1 } }, tags: { a: 1 }, fresh: { k: 1 } });
  assert.deepEqual(tree.env, { size: 4, is_slippery: false, inner: { p: 0.8, q: 1 } }, 'the input is not modified');
});

test('overrides: ~key deletes a key (its default then applies), ~key=value only when it holds that value, like Hydra', () => {
  const tree = { a: { b: 1, c: [1, 2] }, seed: 42, n: null };
  assert.deepEqual(override(tree, ['~a.b', '~seed=42', '~n']), { a: { c: [1, 2] } });
  assert.deepEqual(override(tree, ['~a.c=[1, 2]', 'seed=7', '~seed']), { a: { b: 1 }, n: null });
  assert.deepEqual(override(tree, ['~a', '+a.x=1']), { seed: 42, n: null, a: { x: 1 } }, 'a deleted key can be added again');
  assert.deepEqual(tree, { a: { b: 1, c: [1, 2] }, seed: 42, n: null }, 'the input is not modified');
  assert.match(
    configErrorOf(() => override(tree, ['~a.x'])),
    /- `~a\.x`: `a\.x` is not set; nothing to delete$/,
  );
  assert.match(
    configErrorOf(() => override(tree, ['~seed', '~seed'])),
    /`~seed`: `seed` is not set; nothing to delete/,
  );
  assert.match(
    configErrorOf(() => override({ tags: ['A', 'B'] }, ['~tags.0'])),
    /- `~tags\.0`: `tags` is \["A","B"\], not a mapping/,
    'a list element is not a key, as when setting one',
  );
  assert.match(
    configErrorOf(() => override({ envs: { X: '${env.X}' } }, ['~envs.X.size'])),
    /`envs\.X` is the interpolation `\$\{env\.X\}`; override the referenced path instead: ~env\.X\.size$/,
  );
  assert.match(
    configErrorOf(() => override(tree, ['~seed=7'])),
    /- `~seed=7`: `seed` is 42, not 7; nothing deleted \(use ~seed to delete any value\)$/,
  );
});

test('overrides: bad arguments are ConfigErrors naming the argument', () => {
  assert.match(
    configErrorOf(() => override({ seed: 1 }, ['seed'])),
    /`seed`: expected key=value \(Hydra override syntax: a\.b=1, \+a\.b=1, \+\+a\.b=1, ~a\.b\)/,
  );
  assert.match(
    configErrorOf(() => override({ seed: 1 }, ['+seed=2'])),
    /`\+seed=2`: `seed` is already set \(to 1\); use seed=2 or \+\+seed=2 to override it/,
  );
  assert.match(
    configErrorOf(() => override({ seed: 1 }, ['seed.x=2'])),
    /`seed\.x=2`: `seed` is 1, not a mapping/,
  );
  assert.match(
    configErrorOf(() => override({}, ['a=[1'])),
    /`a=\[1`: the value is not valid YAML/,
  );
  assert.match(
    configErrorOf(() => override({ a: 1 }, ['-a'])),
    /`-a`: expected key=value \(Hydra override syntax: a\.b=1, \+a\.b=1, \+\+a\.b=1, ~a\.b\)/,
  );
  for (const arg of ['__proto__.x=1', '+__proto__=1', 'a.__proto__.b=1']) {
    assert.match(
      configErrorOf(() => override({ a: {} }, [arg])),
      /`__proto__` is not a config key/,
      arg,
    );
  }
});

test("overrides: a plain object's inherited names are new keys, not values already there", () => {
  assert.deepEqual(override({}, ['toString.x=1', '+constructor=2']), { toString: { x: 1 }, constructor: 2 });
});
