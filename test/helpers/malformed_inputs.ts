/**
 * Malformed inputs of the `starpo` command, one case each: the arguments to run and what the error must
 * name (the key or the file). Shared by test/unit/cli/malformed_inputs.test.ts (exit code, message) and
 * bench/malformed_inputs.ts (wall time and peak memory per case).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface MalformedCase {
  name: string;
  /** starpo's arguments. */
  args: string[];
  /** What stderr must hold: the key or the file named, with the reason. */
  names: RegExp;
  /** Why the case cannot run here (e.g. permissions do not bind root), or undefined. */
  skip?: string;
}

const QUICKSTART = 'configs/frozen_lake.yaml';
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Writes the inputs into `dir` (the caller removes it) and returns the cases. */
export function malformedCases(dir: string): MalformedCase[] {
  const at = (name: string) => join(dir, name);
  const quickstart = readFileSync(QUICKSTART, 'utf8');

  // 50 MB: sparse, so writing it costs nothing; a reader that reads first would still hold 50 MB.
  writeFileSync(at('huge.yaml'), '');
  truncateSync(at('huge.yaml'), 50 * 1024 * 1024);
  writeFileSync(at('tag.yaml'), quickstart.replace('seed: 42', 'seed: !!python/name:builtins.str 42'));
  const letters = 'abcdefghi';
  const bomb = [`${letters[0]}: &${letters[0]} [lol, lol, lol, lol, lol, lol, lol, lol, lol]`];
  for (let i = 1; i < letters.length; i++)
    bomb.push(
      `${letters[i]}: &${letters[i]} [${Array(9)
        .fill(`*${letters[i - 1]}`)
        .join(', ')}]`,
    );
  writeFileSync(at('alias_bomb.yaml'), `${bomb.join('\n')}\n`);
  const nested = ['x0: aaaaaaaaaaaaaaaa', ...Array.from({ length: 39 }, (_, i) => `x${i + 1}: "\${x${i}}\${x${i}}"`)];
  writeFileSync(at('interpolation.yaml'), `${nested.join('\n')}\n`);
  writeFileSync(at('nan.yaml'), quickstart.replace('max_grad_norm: 1.0', 'max_grad_norm: .nan').replace('pg_clip: 0.2', 'pg_clip: .inf'));
  writeFileSync(at('binary.yaml'), randomBytes(3000));
  mkdirSync(at('folder.yaml'));
  mkdirSync(at('out'));
  writeFileSync(at('unreadable.yaml'), quickstart);
  chmodSync(at('unreadable.yaml'), 0o000);
  const root = process.getuid?.() === 0;

  return [
    { name: '50 MB config file', args: ['config', 'check', at('huge.yaml')], names: /huge\.yaml[\s\S]*52,428,800 bytes; allowed: at most/ },
    {
      name: 'unknown YAML tag',
      args: ['config', 'check', at('tag.yaml')],
      names: /`seed` \(line \d+\): unknown YAML tag !!python\/name:builtins\.str/,
    },
    { name: 'alias bomb', args: ['config', 'check', at('alias_bomb.yaml')], names: /`[a-i]`: its aliases expand past the limit/ },
    {
      name: 'nested interpolation exploding',
      args: ['config', 'check', at('interpolation.yaml')],
      names: /`x17`: "\$\{x16\}\$\{x16\}" expands to 2,097,152 characters; allowed: at most/,
    },
    {
      name: 'sequence_length too short for the first turn',
      args: ['config', 'check', QUICKSTART, 'sequence_length=100'],
      names:
        /`sequence_length` \(from `sequence_length=100` on the command line\): 100 leaves no room for the first turn of tag FrozenLake .*allowed: >= \d+/,
    },
    {
      name: 'run-json -o <a folder>',
      args: ['run-json', QUICKSTART, '-o', at('out')],
      names: new RegExp(`-o ${esc(at('out'))}: is a folder`),
    },
    {
      name: 'missing config file',
      args: ['config', 'check', at('missing.yaml')],
      names: /missing\.yaml[\s\S]*cannot read the file \(no such file\)/,
    },
    {
      name: 'unreadable config file',
      args: ['config', 'check', at('unreadable.yaml')],
      names: /unreadable\.yaml[\s\S]*cannot read the file \(permission denied\)/,
      skip: root ? 'running as root: file permissions do not stop root from reading' : undefined,
    },
    { name: 'folder as config', args: ['config', 'check', at('folder.yaml')], names: /folder\.yaml[\s\S]*the path is a folder/ },
    {
      name: '.nan and .inf echoed',
      args: ['config', 'check', at('nan.yaml')],
      names: /`max_grad_norm`:.*\(got \.nan\)[\s\S]*`pg_clip`:.*\(got \.inf\)/,
    },
    { name: 'binary file', args: ['config', 'check', at('binary.yaml')], names: /binary\.yaml[\s\S]*(not UTF-8 text|control character)/ },
  ];
}
