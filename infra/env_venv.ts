/**
 * The Python venv of the env bridge (python/starpo_envs, docs/envs.md "Your env in Python"): the pins of
 * python/requirements.txt installed from PyPI once into `<cache>/env-venv-<hash of the pins>/`, so starpo needs
 * nothing by hand to serve a Python env, and changed pins get a venv of their own. Made in a temp folder that
 * is renamed into place, so a crash never leaves half a venv behind; the venv is only ever run as
 * `<venv>/bin/python -m ...`, which a renamed venv runs correctly (its scripts' #! lines are left stale).
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { resolveCacheDir } from './binaries';
import { runCommand, tailLines } from './command';
import { InfraUnavailableError } from './errors';
import { removeStaleTemps, tempDir } from './install';

/** The bridge's Python package folder (on PYTHONPATH of the servers). */
export const BRIDGE_PYTHON_DIR = path.resolve(__dirname, '../python');
const REQUIREMENTS = path.join(BRIDGE_PYTHON_DIR, 'requirements.txt');
/** Written last: a venv folder without it is not used. */
const COMPLETE = '.starpo-complete';

/** `<cacheDir>/env-venv-<first 12 hex of the sha256 of the pins>`. */
export function envVenvDir(cacheDir = resolveCacheDir()): string {
  const hash = createHash('sha256').update(fs.readFileSync(REQUIREMENTS)).digest('hex').slice(0, 12);
  return path.join(cacheDir, `env-venv-${hash}`);
}

/** Runs one install command; throws InfraUnavailableError with the command and its output's tail when it fails. */
async function mustRun(cmd: string, args: string[], log: (line: string) => void): Promise<void> {
  const res = await runCommand(cmd, args, {
    timeoutSeconds: 1800,
    onOutput: (text) => {
      for (const line of text.split('\n'))
        if (/^(Collecting|Installing collected|Successfully installed)/.test(line)) log(line.slice(0, 160));
    },
  });
  if (res.code !== 0) {
    throw new InfraUnavailableError(
      `could not make the env bridge's venv:\n  $ ${res.display}\n  exit ${res.code ?? 'none'}:\n${tailLines(res.tail, 20)}`,
      {
        hint: false,
      },
    );
  }
}

/**
 * The venv's python, made on first use (`python3 -m venv`, then pip install of the pins; about a minute and
 * several hundred MB, most of it openenv-core's server dependencies). Two processes racing both build; the
 * first rename wins and the other's copy is dropped.
 * @throws InfraUnavailableError naming the command that failed (no python3 >= 3.10, no network, a pin pip cannot find)
 */
export async function ensureEnvVenv(opts: { cacheDir?: string; log: (line: string) => void }): Promise<string> {
  const final = envVenvDir(opts.cacheDir);
  const python = path.join(final, 'bin', 'python');
  if (fs.existsSync(path.join(final, COMPLETE))) return python;
  fs.mkdirSync(path.dirname(final), { recursive: true });
  removeStaleTemps(path.dirname(final), path.basename(final));
  const tmp = tempDir(final);
  const t0 = Date.now();
  opts.log(`making the env bridge's Python venv in ${final} from PyPI (${REQUIREMENTS}); once`);
  try {
    await mustRun('python3', ['-c', 'import sys; assert sys.version_info >= (3, 10), sys.version'], opts.log);
    await mustRun('python3', ['-m', 'venv', tmp], opts.log);
    await mustRun(
      path.join(tmp, 'bin', 'python'),
      ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-r', REQUIREMENTS],
      opts.log,
    );
    fs.writeFileSync(path.join(tmp, COMPLETE), `${new Date().toISOString()}\n`);
    fs.renameSync(tmp, final);
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (!fs.existsSync(path.join(final, COMPLETE))) throw err; // else another process made it meanwhile
  }
  opts.log(`env bridge venv ready in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return python;
}
