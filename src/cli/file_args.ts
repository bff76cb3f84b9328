/**
 * File and folder arguments of the CLI, checked before any work starts, so a folder, a missing or an
 * unreadable path is a usage error (exit 2) naming the option and the path, never a raw EISDIR from the
 * middle of a command. Config files are checked by config/yaml_text.ts on the same terms.
 */
import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { clip } from '../config/show';
import { BadInputError } from './exit_codes';

/** What the OS said, in words for the common codes. */
function reason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return code ?? clip((err as Error).message, 200);
}

/**
 * The absolute path of an input file (`--chat FILE`), checked without reading it: a regular, readable
 * file of at most `maxBytes`.
 * @param allowed what the option takes, for messages, e.g. "a JSON list of {role, content}"
 * @throws BadInputError (exit 2) naming the option and the path
 */
export function checkInputFile(option: string, path: string, allowed: string, maxBytes: number): string {
  const file = resolve(path);
  const refuse = (why: string) => new BadInputError(`${option} ${clip(path)}: ${why}; allowed: ${allowed}`);
  try {
    const st = statSync(file);
    if (st.isDirectory()) throw refuse('is a folder');
    if (!st.isFile()) throw refuse('is not a regular file');
    if (st.size > maxBytes) throw refuse(`is ${st.size.toLocaleString('en-US')} bytes, more than ${maxBytes.toLocaleString('en-US')}`);
    accessSync(file, constants.R_OK);
  } catch (err) {
    if (err instanceof BadInputError) throw err;
    throw refuse(`cannot be read (${reason(err)})`);
  }
  return file;
}

/**
 * The absolute path of an output file (`-o FILE`), checked before any work: the file is written through a
 * temp file in its folder (writeFileAtomically), so the nearest existing folder must take a new file. That
 * is tried, not asked (access() says yes for /proc and read-only mounts), and the probe is removed at once.
 * @param option the option's name for messages, e.g. `-o`
 * @throws BadInputError (exit 2) naming the option and value when the path is a folder, a parent on the
 *   way to it is a file, or its nearest existing folder does not take a new file
 */
export function checkOutputFile(option: string, path: string): string {
  const file = resolve(path);
  const allowed = 'allowed: a writable file path (missing parent folders are created)';
  const shown = clip(path);
  if (existsSync(file) && statSync(file).isDirectory()) throw new BadInputError(`${option} ${shown}: is a folder; ${allowed}`);
  let parent = dirname(file);
  while (!existsSync(parent)) parent = dirname(parent);
  if (!statSync(parent).isDirectory()) throw new BadInputError(`${option} ${shown}: ${parent} is a file, not a folder; ${allowed}`);
  const probe = tempPath(join(parent, basename(file)));
  try {
    writeFileSync(probe, '', { flag: 'wx' });
  } catch (err) {
    throw new BadInputError(`${option} ${shown}: ${parent} cannot be written (${reason(err)}); ${allowed}`);
  }
  rmSync(probe, { force: true });
  return file;
}

/** A fresh hidden name beside `file`, for a temp file that is renamed over it or removed. */
function tempPath(file: string): string {
  return join(dirname(file), `.${basename(file)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
}

/**
 * Writes `data` to `file`, creating its missing parent folders, through a temp file in the same folder
 * renamed over it (the temp file is removed on failure), so the file is either complete or untouched.
 */
export function writeFileAtomically(file: string, data: string | Uint8Array): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = tempPath(file);
  try {
    writeFileSync(tmp, data);
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
