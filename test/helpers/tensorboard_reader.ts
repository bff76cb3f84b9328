/**
 * TensorBoard's own event readers, from the `tensorboard` PyPI package pinned in
 * test/fixtures/tensorboard/requirements.txt, in a venv cached at ~/.cache/starpo/tensorboard-venv (made on
 * first use). readLogDir runs test/fixtures/tensorboard/read_events.py over a log folder.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

const VENV = join(homedir(), '.cache/starpo/tensorboard-venv');
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

/** The venv's python, made from PyPI on first use. @throws Error when the venv cannot be made */
function python(): string {
  const py = join(VENV, 'bin/python');
  if (existsSync(py) && spawnSync(py, ['-c', 'import tensorboard'], { encoding: 'utf8' }).status === 0) return py;
  for (const [cmd, args] of [
    ['python3', ['-m', 'venv', VENV]],
    [join(VENV, 'bin/pip'), ['install', '--quiet', '-r', join(FIXTURES, 'requirements.txt')]],
  ] as const) {
    const r = spawnSync(cmd, [...args], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status})`);
  }
  return py;
}

/** Every run folder under `logDir` (relative path -> what TensorBoard reads there). */
export function readLogDir(logDir: string): Record<string, ReadRun> {
  const r = spawnSync(python(), [join(FIXTURES, 'read_events.py'), logDir], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`read_events.py failed (exit ${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, ReadRun>;
}
