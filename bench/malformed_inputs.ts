/**
 * Bench: wall time and peak memory (RSS) of the `starpo` command refusing each malformed input of
 * test/helpers/malformed_inputs.ts, one child process per case (the whole CLI start included), measured
 * by GNU time (/usr/bin/time) when present. The exit code of each case is printed beside it.
 * Run: npx tsx bench/malformed_inputs.ts
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { malformedCases } from '../test/helpers/malformed_inputs';

const GNU_TIME = '/usr/bin/time';

/** One case: exit code, wall seconds and peak RSS in MB (null without GNU time). */
function measure(args: string[]): { code: number | null; seconds: number; rssMb: number | null } {
  const node = [process.execPath, 'bin/starpo.js', ...args];
  const timed = existsSync(GNU_TIME);
  const t0 = performance.now();
  const res = timed
    ? spawnSync(GNU_TIME, ['-f', 'starpo-bench-rss-kb %M', ...node], { encoding: 'utf8' })
    : spawnSync(node[0], node.slice(1), { encoding: 'utf8' });
  const seconds = (performance.now() - t0) / 1000;
  const kb = /starpo-bench-rss-kb (\d+)/.exec(res.stderr)?.[1];
  return { code: res.status, seconds, rssMb: kb === undefined ? null : Number(kb) / 1024 };
}

/** One line of the table. */
function row(name: string, m: ReturnType<typeof measure>): void {
  const rss = m.rssMb === null ? 'n/a' : m.rssMb.toFixed(0);
  console.log(`${name.padEnd(48)} ${String(m.code).padStart(4)}  ${m.seconds.toFixed(2).padStart(6)}  ${rss.padStart(11)}`);
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
console.log(`load average ${load()}; peak RSS by ${existsSync(GNU_TIME) ? GNU_TIME : 'n/a'}`);
console.log(`${'case'.padEnd(48)} exit  wall s  peak RSS MB`);
// The same command on a valid config: what starting the CLI costs at this load.
row('(baseline: the valid quickstart config)', measure(['config', 'check', 'configs/frozen_lake.yaml']));
const inputs = mkdtempSync(join(tmpdir(), 'starpo-malformed-'));
try {
  for (const c of malformedCases(inputs)) {
    if (c.skip) console.log(`${c.name.padEnd(48)} skipped: ${c.skip}`);
    else row(c.name, measure(c.args));
  }
} finally {
  rmSync(inputs, { recursive: true, force: true });
}
console.log(`load average after ${load()}`);
