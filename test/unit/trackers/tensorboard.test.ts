/**
 * The TensorBoard writer and its cursor (src/trackers): what it writes is read back by the tensorboard
 * package's own readers (test/helpers/tensorboard_reader.ts), the folder's records say which steps it holds,
 * a record cut by a killed writer is removed before the next append, and one writer holds a folder at a time.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readRecords, scalarsRecord } from '../../../src/trackers/event_file';
import { FolderBusyError, withFolderLock } from '../../../src/trackers/folder_lock';
import { appendSteps, openRunLog, runLogDir, type TrackedStep } from '../../../src/trackers/tensorboard';
import { readLogDir } from '../../helpers/tensorboard_reader';

const root = mkdtempSync(join(tmpdir(), 'starpo-tb-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** Steps first..last with a few ROLL-named metrics whose values differ per step. */
function steps(first: number, last: number): TrackedStep[] {
  const out: TrackedStep[] = [];
  for (let s = first; s <= last; s++) {
    out.push({
      step: s,
      wallTime: 1_700_000_000 + s,
      metrics: {
        'env/FrozenLake/success': s / 10,
        'actor/pg_loss': -0.125 * s + 1e-7,
        'critic/advantages/mean': 3.3e-3 * s,
        'time/step': 1.5,
      },
    });
  }
  return out;
}

const CONFIG_TEXT = '    runId: r1\n    config:\n      max_steps: 5';

test('event files are read back by TensorBoard: every scalar at its step, the config as text, once each', () => {
  const dir = runLogDir(join(root, 'a'), 'r1', null);
  assert.deepEqual(appendSteps(dir, openRunLog(dir), steps(0, 2), CONFIG_TEXT), [0, 1, 2]);
  assert.deepEqual(appendSteps(dir, openRunLog(dir), steps(0, 4), CONFIG_TEXT), [3, 4], 'steps it holds are not written again');
  assert.equal(readdirSync(dir).filter((n) => n.includes('tfevents')).length, 1, 'a second writer appends to the same file');

  const run = readLogDir(join(root, 'a')).r1;
  assert.ok(run);
  assert.equal(run.events[0]?.what, 'file_version');
  assert.equal(run.events[0]?.file_version, 'brain.Event:2');
  const text = run.events.filter((e) => e.texts && Object.keys(e.texts).length > 0);
  assert.equal(text.length, 1);
  assert.equal(text[0]?.texts?.config, CONFIG_TEXT);
  assert.equal(text[0]?.plugins?.config, 'text');
  assert.deepEqual(run.text_tags, ['config']);
  const scalarEvents = run.events.filter((e) => e.scalars && Object.keys(e.scalars).length > 0);
  assert.deepEqual(
    scalarEvents.map((e) => e.step),
    [0, 1, 2, 3, 4],
  );
  for (const [i, want] of steps(0, 4).entries()) {
    const got = scalarEvents[i];
    assert.equal(got?.wall_time, want.wallTime);
    // TensorBoard's simple_value is a float32, as ROLL's (PyTorch's) SummaryWriter writes it
    assert.deepEqual(got?.scalars, Object.fromEntries(Object.entries(want.metrics).map(([k, v]) => [k, Math.fround(v)])));
  }
  assert.deepEqual(
    run.served_scalars['actor/pg_loss']?.map(([s]) => s),
    [0, 1, 2, 3, 4],
  );
});

test('the cursor is the highest step in the folder; a cut record at the end is removed, then the step is written once', () => {
  const dir = runLogDir(join(root, 'b'), 'r2', 'sweep1');
  assert.equal(dir, join(root, 'b', 'sweep1', 'r2'));
  assert.deepEqual(openRunLog(dir), { file: null, lastStep: -1, hasConfig: false, repairedBytes: 0 });
  appendSteps(dir, openRunLog(dir), steps(0, 1), CONFIG_TEXT);
  const file = openRunLog(dir).file as string;
  const intact = statSync(file).size;
  // A writer killed in the middle of step 2's record.
  const cut = scalarsRecord(2, 0, steps(2, 2)[0]?.metrics ?? {}).subarray(0, 20);
  appendFileSync(file, cut);
  const state = openRunLog(dir);
  assert.deepEqual([state.lastStep, state.hasConfig, state.repairedBytes], [1, true, 20]);
  assert.equal(statSync(file).size, intact);
  assert.deepEqual(appendSteps(dir, state, steps(0, 3), CONFIG_TEXT), [2, 3]);
  const run = readLogDir(join(root, 'b'))['sweep1/r2'];
  assert.deepEqual(
    run?.events.filter((e) => e.scalars && Object.keys(e.scalars).length > 0).map((e) => e.step),
    [0, 1, 2, 3],
  );
});

test('a record whose CRC does not match ends what is read', () => {
  const a = scalarsRecord(0, 1, { x: 1 });
  const b = Buffer.from(scalarsRecord(1, 1, { x: 2 }));
  b[b.length - 6] = (b[b.length - 6] as number) ^ 0xff; // a byte of the data flipped
  const read = readRecords(Buffer.concat([a, b]));
  assert.deepEqual(
    read.events.map((e) => e.step),
    [0],
  );
  assert.equal(read.intactBytes, a.length);
});

test('one writer holds a folder: a live holder makes the next one fail, a dead one is taken over', async () => {
  const dir = join(root, 'lock');
  await withFolderLock(dir, async () => {
    await assert.rejects(
      withFolderLock(dir, async () => 0),
      FolderBusyError,
    );
  });
  assert.equal(await withFolderLock(dir, async () => 1), 1, 'released after use');

  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
  try {
    writeFileSync(join(dir, '.starpo-lock'), JSON.stringify({ host: hostname(), pid: child.pid, at: Date.now() }));
    await assert.rejects(
      withFolderLock(dir, async () => 0),
      (err: Error) => err instanceof FolderBusyError && err.message.includes(`process ${child.pid}`),
    );
  } finally {
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
  }
  assert.equal(await withFolderLock(dir, async () => 2), 2, 'the killed holder is gone: its lock is taken over');
  writeFileSync(join(dir, '.starpo-lock'), JSON.stringify({ host: 'another-host', pid: 1, at: Date.now() - 301_000 }));
  assert.equal(await withFolderLock(dir, async () => 3), 3, "another host's lock older than STALE_SECONDS is taken over");
  assert.throws(() => readFileSync(join(dir, '.starpo-lock')), /ENOENT/);
});
