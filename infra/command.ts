/**
 * Running an install command (pip, go) to completion and keeping the tail of its output for
 * error messages.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';

/** Outcome of one command. `code` is null when it could not start or was killed on timeout. */
export interface CommandResult {
  /** The command line as a human would type it. */
  display: string;
  code: number | null;
  /** Last `maxChars` characters of stdout+stderr (or the spawn error). */
  tail: string;
}

/** Renders argv as one shell-like line for messages. */
export function displayCommand(cmd: string, args: readonly string[], env: Record<string, string> = {}): string {
  const q = (s: string) => (/^[\w@%+=:,./=-]+$/.test(s) ? s : JSON.stringify(s));
  const prefix = Object.entries(env)
    .map(([k, v]) => `${k}=${q(v)} `)
    .join('');
  return prefix + [cmd, ...args].map(q).join(' ');
}

/**
 * Runs `cmd args` with extra `env`, waiting at most `timeoutSeconds` (then SIGKILL); keeps the last
 * `maxChars` characters of output (default 4000) and passes every chunk of stdout/stderr to `onOutput`.
 * Never throws: failures are reported in the result.
 */
export function runCommand(
  cmd: string,
  args: readonly string[],
  opts: { env?: Record<string, string>; cwd?: string; timeoutSeconds?: number; maxChars?: number; onOutput?: (text: string) => void } = {},
): Promise<CommandResult> {
  const display = displayCommand(cmd, args, opts.env);
  return new Promise((resolve) => {
    let out = '';
    const keep = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      out = (out + text).slice(-(opts.maxChars ?? 4000));
      opts.onOutput?.(text);
    };
    let child: ChildProcessByStdio<null, Readable, Readable>;
    try {
      child = spawn(cmd, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      resolve({ display, code: null, tail: String(err) });
      return;
    }
    const timer = setTimeout(
      () => {
        keep(Buffer.from(`\n[killed after ${opts.timeoutSeconds} s]`));
        child.kill('SIGKILL');
      },
      (opts.timeoutSeconds ?? 600) * 1000,
    );
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ display, code: null, tail: `${out}\n${String(err)}`.trim() });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ display, code, tail: out.trim() });
    });
  });
}

/** Last `n` lines of `text`, indented for inclusion in an error message. */
export function tailLines(text: string, n = 12): string {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(-n)
    .map((l) => `    ${l}`)
    .join('\n');
}
