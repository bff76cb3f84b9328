/**
 * TensorBoard's own event readers, from the `tensorboard` PyPI package pinned in
 * test/fixtures/tensorboard/requirements.txt, in a venv cached at ~/.cache/starpo/tensorboard-venv (made on
 * first use). readLogDir runs test/fixtures/tensorboard/read_events.py over a log folder.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { venvBin } from './pypi_venv';

const FIXTURES = join(__dirname, '../fixtures/tensorboard');

/** One event as TensorBoard's LegacyEventFileLoader read it. */
export interface ReadEvent {
  file: string;
  step: number;
  wall_time: number;
  what: 'file_version' | 'summary' | null;
  file_version?: string;
  scalars?: Record<string, number>;
  texts?: Record<string, string>;
  plugins?: Record<string, string>;
}

/** One run folder as TensorBoard reads it. */
export interface ReadRun {
  events: ReadEvent[];
  /** What EventAccumulator serves: tag -> [step, value] in order. */
  served_scalars: Record<string, Array<[number, number]>>;
  text_tags: string[];
}

/** Every run folder under `logDir` (relative path -> what TensorBoard reads there). */
export function readLogDir(logDir: string): Record<string, ReadRun> {
  const r = spawnSync(
    join(venvBin('tensorboard-venv', join(FIXTURES, 'requirements.txt'), 'tensorboard'), 'python'),
    [join(FIXTURES, 'read_events.py'), logDir],
    { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
  );
  if (r.status !== 0) throw new Error(`read_events.py failed (exit ${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, ReadRun>;
}
