/**
 * env_config.command's servers (src/envs/openenv/local_server.ts): one per command in a process, none started
 * when the URL answers already, started again after it died, and never outliving the process that started it,
 * even a SIGKILLed one (infra/tied_process.ts). The command here is a small Node HTTP server that writes its pid.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { freePort } from '../../../infra/ports';
import { ensureLocalServer } from '../../../src/envs/openenv/local_server';

const dir = mkdtempSync(join(tmpdir(), 'starpo-local-server-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A command serving GET /health on `port` that writes its pid to `pidFile` (one line per start). */
function healthServer(port: number, pidFile: string): string {
  const js = `require('fs').appendFileSync(${JSON.stringify(pidFile)}, process.pid + '\\n'); require('http').createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1')`;
  return `${JSON.stringify(process.execPath)} -e ${JSON.stringify(js)}`;
}

const pids = (file: string): number[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').map(Number) : []);

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits (at most 20 s) until `pid` has exited; whether it did. */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 200 && running(pid); i++) await new Promise((r) => setTimeout(r, 100));
  return !running(pid);
}

test('one server per command in a process; none when the URL answers already; started again after a SIGKILL', async () => {
  const port = await freePort();
  const pidFile = join(dir, 'in-process.pids');
  const command = healthServer(port, pidFile);
  const health = `http://127.0.0.1:${port}/health`;
  await Promise.all([ensureLocalServer(command, health, 30), ensureLocalServer(command, health, 30)]);
  await ensureLocalServer(command, health, 30);
  assert.equal(pids(pidFile).length, 1, 'concurrent and later callers share one server');
  const other = join(dir, 'other.pids');
  await ensureLocalServer(healthServer(port, other), health, 30);
  assert.deepEqual(pids(other), [], 'another command on a URL that answers starts nothing');
  process.kill(pids(pidFile)[0], 'SIGKILL');
  assert.ok(await gone(pids(pidFile)[0]));
  // This process learns of the exit through its watchdog child a moment later (a loaded host: later still); until
  // then a caller is told the server runs, as the next episode's reset would be, and the one after starts it.
  for (let i = 0; i < 200 && pids(pidFile).length < 2; i++) {
    await ensureLocalServer(command, health, 30);
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(pids(pidFile).length, 2, 'the dead server is started again');
  const res = await fetch(health);
  assert.equal(await res.text(), 'ok');
  process.kill(pids(pidFile)[1], 'SIGTERM');
});

test('a SIGKILLed process that started a command leaves no server behind', async () => {
  const port = await freePort();
  const pidFile = join(dir, 'worker.pids');
  const health = `http://127.0.0.1:${port}/health`;
  const worker = spawn(
    process.execPath,
    ['--import', 'tsx', join(__dirname, '../../fixtures/openenv/command_worker.ts'), healthServer(port, pidFile), health],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    worker.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
    worker.once('exit', (code) => reject(new Error(`the worker exited (${code}) before its server answered`)));
  });
  const [server] = pids(pidFile);
  assert.ok(running(server));
  worker.kill('SIGKILL');
  assert.ok(await gone(server), `server ${server} still runs 20 s after its worker was SIGKILLed`);
  await assert.rejects(fetch(health), 'nothing answers on its port');
});
