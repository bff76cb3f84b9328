/** Config YAML read within bounds: size before reading, UTF-8 text, core-schema tags, alias cap; values shown as written. */

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { resolveInterpolations } from '../../../src/config/interpolate';
import { parseOverrides } from '../../../src/config/overrides';
import { clip, show } from '../../../src/config/show';
import { MAX_ALIAS_COUNT, MAX_CONFIG_BYTES, parseConfigYaml, readConfigText, YamlInputError } from '../../../src/config/yaml_text';
import { ConfigError } from '../../../src/contract';

const dir = mkdtempSync(join(tmpdir(), 'starpo-yaml-text-'));

/** The problems of a YamlInputError thrown by fn. */
function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof YamlInputError, String(err));
    return err.problems;
  }
  assert.fail('expected a YamlInputError');
}

test('a file past MAX_CONFIG_BYTES is refused by its size (a sparse file: nothing to read)', () => {
  const file = join(dir, 'big.yaml');
  writeFileSync(file, '');
  truncateSync(file, 50 * 1024 * 1024);
  const [problem] = problemsOf(() => readConfigText(file));
  assert.equal(problem, `the file is 52,428,800 bytes; allowed: at most ${MAX_CONFIG_BYTES.toLocaleString('en-US')} bytes`);
});

test('a folder, a missing file and a binary file are refused saying what they are', () => {
  const folder = join(dir, 'folder.yaml');
  mkdirSync(folder);
  assert.match(problemsOf(() => readConfigText(folder))[0], /the path is a folder/);
  assert.match(problemsOf(() => readConfigText(join(dir, 'missing.yaml')))[0], /cannot read the file \(no such file\)/);
  const binary = join(dir, 'binary.yaml');
  writeFileSync(binary, Buffer.from([0xff, 0xfe, 0x00, 0x41]));
  assert.match(problemsOf(() => readConfigText(binary))[0], /not UTF-8 text/);
  const control = join(dir, 'control.yaml');
  writeFileSync(control, 'a: 1\nb: x\u0000y\n');
  assert.equal(
    problemsOf(() => readConfigText(control))[0],
    'line 2 holds the control character U+0000 (a binary file?); allowed: YAML text',
  );
  const ok = join(dir, 'ok.yaml');
  writeFileSync(ok, 'a:\t1\r\nb: é\n');
  assert.equal(readConfigText(ok), 'a:\t1\r\nb: é\n');
});

test('an unknown YAML tag is refused with its key; core-schema tags are read', () => {
  const problems = problemsOf(() => parseConfigYaml('seed: 1\nmodel:\n  name: !!python/name:builtins.str x\n'));
  assert.equal(problems.length, 1);
  assert.match(problems[0], /^`model\.name` \(line 3\): unknown YAML tag !!python\/name:builtins\.str; allowed: /);
  assert.match(problemsOf(() => parseConfigYaml('a: !custom 1\n'))[0], /^`a` \(line 1\): unknown YAML tag !custom/);
  assert.deepEqual(parseConfigYaml('a: !!str 7\nb: !!float 1.5\nc: [!!int "3"]\n'), { a: '7', b: 1.5, c: [3] });
});

test('a __proto__ key is refused with its path and line, at any depth, not dropped', () => {
  assert.deepEqual(
    problemsOf(() => parseConfigYaml('seed: 1\n__proto__:\n  max_steps: 3\nwarmup:\n  __proto__: 1\n')),
    ['`__proto__` (line 2): `__proto__` is not a config key', '`warmup.__proto__` (line 5): `__proto__` is not a config key'],
  );
  assert.deepEqual(parseConfigYaml('proto: 1\n'), { proto: 1 });
});

test('aliases that expand past MAX_ALIAS_COUNT are refused naming the key; ordinary anchors are read', () => {
  const lines = ['a: &a [x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 9; i++)
    lines.push(
      `${'abcdefghi'[i]}: &${'abcdefghi'[i]} [${Array(9)
        .fill(`*${'abcdefghi'[i - 1]}`)
        .join(', ')}]`,
    );
  const [problem] = problemsOf(() => parseConfigYaml(`${lines.join('\n')}\n`));
  assert.match(problem, new RegExp(`^\`[b-i]\`: its aliases expand past the limit of ${MAX_ALIAS_COUNT}`));
  assert.deepEqual(parseConfigYaml('base: &b {lr: 1}\nactor: {args: *b}\n'), { base: { lr: 1 }, actor: { args: { lr: 1 } } });
});

test('an override value goes through the same reader: an unknown tag names the argument', () => {
  assert.throws(
    () => parseOverrides(['seed=!!python/name:os.system x']),
    (err) =>
      err instanceof ConfigError &&
      /`seed=!!python\/name:os\.system x`: the value has an unknown YAML tag !!python\/name:os\.system;/.test(err.message),
  );
});

test('an interpolation that expands past the limit names its key instead of exhausting memory', () => {
  const tree: Record<string, unknown> = { x0: 'a'.repeat(1024) };
  for (let i = 1; i < 40; i++) tree[`x${i}`] = `\${x${i - 1}}\${x${i - 1}}`;
  assert.throws(
    () => resolveInterpolations(tree, { source: 't.yaml' }),
    (err) =>
      err instanceof ConfigError &&
      /`x11`: "\$\{x10\}\$\{x10\}" expands to 2,097,152 characters; allowed: at most 1,048,576/.test(err.message),
  );
});

test('show: .nan and .inf as YAML writes them, nested too; clip escapes unprintable characters and cuts long text', () => {
  assert.equal(show(Number.NaN), '.nan');
  assert.equal(show(Number.POSITIVE_INFINITY), '.inf');
  assert.equal(show(Number.NEGATIVE_INFINITY), '-.inf');
  assert.equal(show([1, Number.NaN]), '[1,".nan"]');
  assert.equal(show(undefined), '(missing)');
  assert.equal(clip('a\u0000b\u001b[31m\ud800'), 'a\\u0000b\\u001b[31m\\ud800');
  assert.equal(clip('é😀'), 'é😀');
  const long = clip('z'.repeat(5000), 10);
  assert.equal(long, 'zzzzzzzzzz... (5,000 characters)');
  // A long string keeps its closing quote and counts its own characters, not the quotes around them.
  assert.equal(show('y'.repeat(300)), `"${'y'.repeat(120)}"... (300 characters)`);
  assert.equal(show('y'.repeat(120)), `"${'y'.repeat(120)}"`);
  // An emoji is one character: never cut in half, counted once.
  assert.equal(show('😀'.repeat(150)), `"${'😀'.repeat(120)}"... (150 characters)`);
  assert.equal(clip('😀'.repeat(150), 3), '😀😀😀... (150 characters)');
});

test('a key given twice is refused naming the key with its path and line', () => {
  assert.deepEqual(
    problemsOf(() => parseConfigYaml('seed: 1\nactor_train:\n  training_args: {}\n  training_args: { learning_rate: 1 }\n')),
    [
      '`actor_train.training_args` (line 4): the key is given twice in the same mapping; allowed: each key once (the second would replace the first unseen)',
    ],
  );
  assert.match(problemsOf(() => parseConfigYaml('seed: 1\nseed: 2\n'))[0], /^`seed` \(line 2\): the key is given twice/);
});
