/**
 * A run's TensorBoard folder: event files whose records are the tracker's own cursor. Every step is one
 * record holding all of that step's scalars, appended in step order and synced, so the folder tells which
 * steps it has: those up to the highest step in it. A writer killed mid-record leaves a cut record at the
 * end of a file; the next writer truncates it before appending, so no step is written twice or in part.
 * One writer per folder at a time (the workflow tracks a run from one activity at a time).
 */
import * as fs from 'node:fs';
import { hostname } from 'node:os';
import * as path from 'node:path';
import { fileVersionRecord, readRecords, scalarsRecord, textRecord } from './event_file';

/** The tag of the run's resolved config (text, at step 0). */
export const CONFIG_TAG = 'config';

/** One step as the store holds it (metrics/step-N.json) and when it was written. */
export interface TrackedStep {
  step: number;
  metrics: Record<string, number>;
  /** Seconds since the epoch: the event's wall time. */
  wallTime: number;
}

/** What a run's folder holds. */
export interface RunLogState {
  /** The newest event file (the one to append to), or null when the folder has none. */
  file: string | null;
  /** The highest step written, -1 when none. */
  lastStep: number;
  /** Whether the config text is written. */
  hasConfig: boolean;
  /** Bytes of cut records removed from the ends of files. */
  repairedBytes: number;
}

/** The event-file folder of a run: `<logDir>/<runId>`, or `<logDir>/<sweepId>/<runId>` for a sweep's child. */
export function runLogDir(logDir: string, runId: string, sweepId: string | null): string {
  return sweepId === null ? path.join(logDir, runId) : path.join(logDir, sweepId, runId);
}

/** Event files in `dir`, by name (TensorBoard reads them in this order). */
function eventFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((name) => name.includes('tfevents'))
    .sort()
    .map((name) => path.join(dir, name));
}

/** Reads the folder's event files and truncates any cut record at a file's end. */
export function openRunLog(dir: string): RunLogState {
  const state: RunLogState = { file: null, lastStep: -1, hasConfig: false, repairedBytes: 0 };
  for (const file of eventFiles(dir)) {
    const bytes = fs.readFileSync(file);
    const { events, intactBytes } = readRecords(bytes);
    if (intactBytes < bytes.length) {
      fs.truncateSync(file, intactBytes);
      state.repairedBytes += bytes.length - intactBytes;
    }
    for (const e of events) {
      if (e.fileVersion !== undefined) continue;
      if (CONFIG_TAG in e.texts) state.hasConfig = true;
      else state.lastStep = Math.max(state.lastStep, e.step);
    }
    state.file = file;
  }
  return state;
}

/** A new event file's name, as TensorFlow names them (`events.out.tfevents.<seconds>.<host>.<pid>`). */
function newEventFile(dir: string): string {
  return path.join(dir, `events.out.tfevents.${Math.floor(Date.now() / 1000)}.${hostname()}.${process.pid}.starpo`);
}

/**
 * Appends the config text (when missing) and each of `steps` above the folder's last step, in one synced
 * write. @param state openRunLog(dir) just before. @param steps in increasing step order. @returns the steps written.
 */
export function appendSteps(dir: string, state: RunLogState, steps: TrackedStep[], configText: string): number[] {
  const records: Buffer[] = [];
  const now = Date.now() / 1000;
  let file = state.file;
  if (file === null) {
    fs.mkdirSync(dir, { recursive: true });
    file = newEventFile(dir);
    records.push(fileVersionRecord(now));
  }
  if (!state.hasConfig) records.push(textRecord(0, now, CONFIG_TAG, configText));
  const written: number[] = [];
  let last = state.lastStep;
  for (const s of steps) {
    if (s.step <= last) continue;
    records.push(scalarsRecord(s.step, s.wallTime, s.metrics));
    written.push(s.step);
    last = s.step;
  }
  if (records.length === 0) return written;
  const fd = fs.openSync(file, 'a');
  try {
    fs.writeSync(fd, Buffer.concat(records));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return written;
}
