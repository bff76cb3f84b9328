/**
 * A child process that never outlives this one, even when this one is SIGKILLed (no 'exit' handler runs then):
 * a small Node watchdog runs the command in a process group of its own and reads its stdin, a pipe from this
 * process. The kernel closes that pipe however this process ends; at its end, or at SIGTERM / SIGINT, the
 * watchdog stops the command's whole group (SIGTERM, SIGKILL 5 s later) and exits. When the command exits by
 * itself the watchdog exits with its code. Used for the env servers a worker or `starpo env serve` starts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';

const WATCHDOG = `
const { spawn } = require('node:child_process');
const [file, ...args] = JSON.parse(process.argv[1]);
const child = spawn(file, args, { stdio: ['ignore', 'inherit', 'inherit'], detached: true });
const group = (signal) => { try { process.kill(-child.pid, signal); } catch {} };
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  group('SIGTERM');
  setTimeout(() => { group('SIGKILL'); process.exit(1); }, 5000).unref();
};
process.stdin.on('end', stop).on('error', stop).resume();
process.on('SIGTERM', stop).on('SIGINT', stop);
child.on('error', (err) => { console.error(String(err)); process.exit(127); });
child.on('exit', (code) => { group('SIGTERM'); process.exit(code ?? 1); });
`;

/** Options of spawnTied. */
export interface TiedOptions {
  env?: NodeJS.ProcessEnv;
  /** Where the command's stdout and stderr go: this process's own, or pipes on the returned child. */
  output: 'inherit' | 'pipe';
}

/**
 * Starts `file args` tied to this process; the returned child is the watchdog (its exit is the command's).
 * Neither keeps this process alive. Stop it early with child.kill('SIGTERM').
 */
export function spawnTied(file: string, args: string[], opts: TiedOptions): ChildProcess {
  const child = spawn(process.execPath, ['-e', WATCHDOG, JSON.stringify([file, ...args])], {
    env: opts.env ?? process.env,
    stdio: ['pipe', opts.output, opts.output],
  });
  child.unref();
  (child.stdin as Socket).unref(); // the pipe is only there to close when this process ends
  return child;
}
