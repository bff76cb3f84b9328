/**
 * An output file a command writes (`starpo report -o FILE`): checked before any work (a folder, or a
 * path under a file, is bad input naming the option and value), then written with its missing parent
 * folders created, atomically (a temp file next to it renamed over it), so the file is either complete
 * or untouched.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { BadInputError } from './exit_codes';

/**
 * The absolute path of an output file, checked without writing anything.
 * @param option the option's name for messages, e.g. `-o`
 * @throws BadInputError (exit 2) naming the option and value when the path is a folder or a parent
 *   on the way to it is a file
 */
export function checkOutputFile(option: string, path: string): string {
  const file = resolve(path);
  if (existsSync(file) && statSync(file).isDirectory()) {
    throw new BadInputError(`${option} ${path}: is a folder; allowed: a file path (missing parent folders are created)`);
  }
  let parent = dirname(file);
  while (!existsSync(parent)) parent = dirname(parent);
  if (!statSync(parent).isDirectory()) {
    throw new BadInputError(`${option} ${path}: ${parent} is a file, not a folder; allowed: a file path (missing parent folders are created)`);
  }
  return file;
}

/**
 * Writes `data` to `file`, creating its missing parent folders, through a temp file in the same folder
 * renamed over it (the temp file is removed on failure).
 */
export function writeFileAtomically(file: string, data: string | Uint8Array): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = join(dirname(file), `.${basename(file)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    writeFileSync(tmp, data);
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
