/**
 * The `starpo` command's help and errors, through `node bin/starpo.js` as users run it: every command's
 * help has examples, the top-level help lists the exit codes; bad input prints one line without a
 * stack trace (unless --verbose) and exits with its code (2 bad input, 3 infra unavailable): bad run
 * ids, eval targets and report paths before any server is contacted, unreachable servers named with
 * the remedy; --version.
 */

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePort } from '../../../infra/ports';

/** `starpo <args>`: exit code, stdout, stderr. */
function starpo(args: string[], env: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, ['bin/starpo.js', ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** `starpo <args>` without blocking, so several run at once (each start compiles the CLI with tsx). */
function starpoAsync(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['bin/starpo.js', ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Environment pointing at servers that do not run (a free port), so any connection is refused. */
async function deadServers(): Promise<{ port: number; env: Record<string, string> }> {
  const port = await freePort();
  return {
    port,
    env: { TEMPORAL_ADDRESS: `127.0.0.1:${port}`, S3_ENDPOINT: `http://127.0.0.1:${port}`, S3_ACCESS_KEY: 'a', S3_SECRET_KEY: 'b' },
  };
}

/** Command names of a help text's "Commands:" section (without `help`). */
function commandsIn(help: string): string[] {
  const section = help.split('\nCommands:\n')[1]?.split('\n\n')[0] ?? '';
  return section
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] as string)
    .filter((n) => n && n !== 'help');
}

const STACK = /^\s+at /m;

test('starpo --help lists every command and the exit codes 0-3', () => {
  const top = starpo(['--help']);
  assert.equal(top.code, 0);
  for (const line of [
    /^ {2}0 {2}ok$/m,
    /^ {2}1 {2}the run failed/m,
    /^ {2}2 {2}bad input/m,
    /^ {2}3 {2}infra unavailable/m,
    /--verbose for stack traces/,
  ]) {
    assert.match(top.stdout, line);
  }
  for (const name of ['train', 'resume', 'export', 'status', 'list', 'config', 'infra'])
    assert.ok(commandsIn(top.stdout).includes(name), name);
});

test('every command and subcommand has a help text with examples of itself', async () => {
  const names = commandsIn(starpo(['--help']).stdout);
  const groups = await Promise.all(names.map((name) => starpoAsync([name, '--help'])));
  const paths = names.flatMap((name, i) => [[name], ...commandsIn(groups[i]?.stdout ?? '').map((sub) => [name, sub])]);
  assert.ok(paths.length >= 15, `found ${paths.map((p) => p.join(' ')).join(', ')}`);
  const helps = await Promise.all(paths.map((path) => starpoAsync([...path, '--help'])));
  paths.forEach((path, i) => {
    const help = helps[i] as { code: number | null; stdout: string };
    assert.equal(help.code, 0, path.join(' '));
    const examples = help.stdout.split('\nExamples:\n')[1];
    assert.ok(examples, `${path.join(' ')} --help has no Examples section`);
    assert.match(examples, new RegExp(`^ {2}\\$ starpo ${path[0]}`, 'm'), `${path.join(' ')}: an example runs it`);
    const args = help.stdout.split('\nArguments:\n')[1]?.split('\n\n')[0] ?? '';
    for (const line of args.split('\n').filter((l) => /^ {2}\S/.test(l))) {
      assert.match(line, /^ {2}\S+ {2,}\S/, `${path.join(' ')}: argument without a description: ${line.trim()}`);
    }
  });
});

test('a reader that closes the pipe early (starpo --help | head -1) ends the command quietly, exit 0', async () => {
  for (const args of [['--help'], ['config', 'print', 'configs/frozen_lake.yaml']]) {
    const child = spawn(process.execPath, ['bin/starpo.js', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // closed before the command can have started, so its first write meets EPIPE
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(stderr, '', args.join(' '));
    assert.equal(code, 0, args.join(' '));
  }
});

test('usage and config errors: exit 2, one line, no stack trace; --verbose adds the stack', () => {
  const cases: Array<[string[], RegExp]> = [
    [['bogus'], /^error: unknown command 'bogus'\n$/],
    [['list', '--limit', '0'], /^error: option '--limit <n>' argument '0' is invalid\. "0" is not a positive integer\n$/],
    [['export', 'some-run'], /^error: required option '--to <dir>' not specified\n$/],
    [
      ['config', 'check', 'test/fixtures/tiny_frozen_lake.yaml', 'pretrain=/no/such/model'],
      /^ {2}- `pretrain` \(from `pretrain=\/no\/such\/model` on the command line\): \/no\/such\/model is not a folder; allowed: the preset "tiny" or an HF Qwen2 or Llama model folder/m,
    ],
  ];
  for (const [args, expected] of cases) {
    const res = starpo(args);
    assert.equal(res.code, 2, args.join(' '));
    assert.match(res.stderr, expected, args.join(' '));
    assert.doesNotMatch(res.stderr, STACK, args.join(' '));
  }
  const verbose = starpo(['--verbose', 'config', 'check', 'no/such/config.yaml']);
  assert.equal(verbose.code, 2);
  assert.match(verbose.stderr, /^ConfigError: no\/such\/config\.yaml: invalid config/);
  assert.match(verbose.stderr, STACK);
});

test('bad server settings exit 2 and unreachable servers exit 3, each with one line and no stack trace', async () => {
  const badEnv = starpo(['infra', 'up'], { S3_ENDPOINT: 'http://127.0.0.1:1' });
  assert.equal(badEnv.code, 2);
  assert.equal(
    badEnv.stderr,
    "error: S3_ENDPOINT is set (http://127.0.0.1:1) but TEMPORAL_ADDRESS is not (nor a profile's address); set both (TEMPORAL_ADDRESS=host:port, or --profile) or neither\n",
  );
  const { port, env: dead } = await deadServers();
  const status = starpo(['status', 'some-run'], dead);
  assert.equal(status.code, 3);
  assert.match(
    status.stderr,
    new RegExp(
      `^error: cannot reach the Temporal server at 127\\.0\\.0\\.1:${port} \\(.+\\); check the address, TLS and API key of the profile \\(--profile, TEMPORAL_CONFIG_FILE\\) or the TEMPORAL_\\* variables\\n$`,
    ),
  );
  const out = mkdtempSync(join(tmpdir(), 'starpo-dead-'));
  const s3 = await Promise.all(
    [
      ['export', 'some-run', '--to', join(out, 'exported')],
      ['report', 'some-run', '-o', join(out, 'new', 'r.html')],
      ['trajectories', 'some-run', '--step', '0'],
      ['eval', 'some-run', '--no-workers'],
    ].map((args) => starpoAsync(args, dead)),
  );
  for (const res of s3) {
    assert.equal(res.code, 3, res.stderr);
    assert.match(
      res.stderr,
      new RegExp(
        `^error: cannot reach the S3 server at http://127\\.0\\.0\\.1:${port} \\(.*ECONNREFUSED.*\\); start the local servers with \`starpo infra up\` or set S3_ENDPOINT\\n$`,
      ),
    );
  }
  assert.deepEqual(readdirSync(out), [], 'nothing written');
});

test('a bad run id, eval target or -o exits 2 naming it, before any server is contacted', async () => {
  const { env: dead } = await deadServers();
  const out = mkdtempSync(join(tmpdir(), 'starpo-bad-'));
  writeFileSync(join(out, 'plain'), '');
  const cases: Array<[string[], RegExp]> = [
    [
      ['report', '../etc'],
      /^error: command-argument value '\.\.\/etc' is invalid for argument 'id'\. runId "\.\.\/etc" is invalid; allowed: 1-128 characters/,
    ],
    [['report', 'a/b'], /argument 'id'\. runId "a\/b" is invalid/],
    [['report', ''], /argument 'id'\. runId "" is invalid/],
    [['trajectories', '../etc', '--step', '1'], /argument 'runId'\. runId "\.\.\/etc" is invalid/],
    [['export', '../etc', '--to', join(out, 'x')], /argument 'runId'\. runId "\.\.\/etc" is invalid/],
    [['eval', '../etc'], /^error: \.\.\/etc: not a run id or a checkpoint key; allowed: a run id/],
    [['eval', 'runs/../checkpoints/step-000001/manifest.json'], /^error: runId "\.\." is invalid/],
    [['report', 'some-run', '-o', out], new RegExp(`^error: -o ${out}: is a folder; allowed: a writable file path`)],
    [
      ['report', 'some-run', '-o', join(out, 'plain', 'r.html')],
      new RegExp(`^error: -o ${out}/plain/r\\.html: ${out}/plain is a file, not a folder`),
    ],
  ];
  const results = await Promise.all(cases.map(([args]) => starpoAsync(args, dead)));
  cases.forEach(([args, expected], i) => {
    const res = results[i] as { code: number | null; stderr: string };
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, expected, args.join(' '));
    assert.equal(res.stderr.split('\n').length, 2, `one line: ${res.stderr}`);
  });
});

test('starpo --version prints the package version', () => {
  const res = starpo(['--version']);
  assert.equal(res.code, 0);
  assert.equal(res.stdout, `${(JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version}\n`);
});
