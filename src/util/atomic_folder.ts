/** A folder written whole or not at all: its files go into a temp folder beside it, which is then renamed into place. */
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Writes `files` (by name, relative paths) into a fresh temp folder next to `dir`, then renames it to `dir` (an empty `dir` is
 * replaced), so a crash never leaves half a folder.
 * @throws Error from the file system, e.g. when `dir` exists and is not empty (the temp folder is removed)
 */
export function writeFolderAtomically(dir: string, files: Record<string, Uint8Array>): void {
  mkdirSync(dirname(dir), { recursive: true });
  const tmp = join(dirname(dir), `.${basename(dir)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(tmp);
  try {
    for (const [name, bytes] of Object.entries(files)) {
      mkdirSync(dirname(join(tmp, name)), { recursive: true }); // a name may hold a subfolder (base/config.json)
      writeFileSync(join(tmp, name), bytes);
    }
    renameSync(tmp, dir);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}
