/**
 * starpo's Python venvs: the env bridge's (python/starpo_envs, docs/envs.md "Your env in Python") and the W&B
 * tracker's (python/starpo_wandb.py). Each is its requirements file's pins installed from PyPI once into
 * `<cache>/<name>-<hash of the pins>/`, so starpo needs nothing by hand, and changed pins get a venv of their own.
 * Made in a temp folder that is renamed into place, so a crash never leaves half a venv behind; a venv is only
 * ever run as `<venv>/bin/python ...`, which a renamed venv runs correctly (its scripts' #! lines are left stale).
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { resolveCacheDir } from './binaries';
import { runCommand, tailLines } from './command';
import { InfraUnavailableError } from './errors';
import { removeStaleTemps, tempDir } from './install';

/** starpo's Python folder: the bridge's package (on PYTHONPATH of the servers) and the W&B script. */
export const BRIDGE_PYTHON_DIR = path.resolve(__dirname, '../python');
/** Written last: a venv folder without it is not used. */
const COMPLETE = '.starpo-complete';

/** One venv: its folder's name, what it is for (in messages), its pins. */
export interface PythonVenv {
  name: string;
  purpose: string;
  requirements: string;
}

export const ENV_VENV: PythonVenv = {
  name: 'env-venv',
  purpose: "the env bridge's",
  requirements: path.join(BRIDGE_PYTHON_DIR, 'requirements.txt'),
};

export const WANDB_VENV: PythonVenv = {
  name: 'wandb-venv',
  purpose: "the W&B tracker's",
  requirements: path.join(BRIDGE_PYTHON_DIR, 'wandb_requirements.txt'),
};

/** `<cacheDir>/<name>-<first 12 hex of the sha256 of the pins>`. */
export function venvDir(venv: PythonVenv, cacheDir = resolveCacheDir()): string {
  const hash = createHash('sha256').update(fs.readFileSync(venv.requirements)).digest('hex').slice(0, 12);
  return path.join(cacheDir, `${venv.name}-${hash}`);
}

/** Runs one install command; throws InfraUnavailableError with the command and its output's tail when it fails. */
async function mustRun(venv: PythonVenv, cmd: string, args: string[], log: (line: string) => void): Promise<void> {
  const res = await runCommand(cmd, args, {
    timeoutSeconds: 1800,
    onOutput: (text) => {
      for (const line of text.split('\n'))
        if (/^(Collecting|Installing collected|Successfully installed)/.test(line)) log(line.slice(0, 160));
    },
  });
  if (res.code !== 0) {
    throw new InfraUnavailableError(
      `could not make ${venv.purpose} venv:\n  $ ${res.display}\n  exit ${res.code ?? 'none'}:\n${tailLines(res.tail, 20)}`,
      {
        hint: false,
      },
    );
  }
}

/**
 * The venv's python, made on first use (`python3 -m venv`, then pip install of the pins; the env bridge's takes
 * about a minute and several hundred MB, most of it openenv-core's server dependencies). Two processes racing
 * both build; the first rename wins and the other's copy is dropped.
 * @throws InfraUnavailableError naming the command that failed (no python3 >= 3.10, no network, a pin pip cannot find)
 */
export async function ensureVenv(venv: PythonVenv, opts: { cacheDir?: string; log: (line: string) => void }): Promise<string> {
  const final = venvDir(venv, opts.cacheDir);
  const python = path.join(final, 'bin', 'python');
  if (fs.existsSync(path.join(final, COMPLETE))) return python;
  fs.mkdirSync(path.dirname(final), { recursive: true });
  removeStaleTemps(path.dirname(final), path.basename(final));
  const tmp = tempDir(final);
  const t0 = Date.now();
  opts.log(`making ${venv.purpose} Python venv in ${final} from PyPI (${venv.requirements}); once`);
  try {
    await mustRun(venv, 'python3', ['-c', 'import sys; assert sys.version_info >= (3, 10), sys.version'], opts.log);
    await mustRun(venv, 'python3', ['-m', 'venv', tmp], opts.log);
    await mustRun(
      venv,
      path.join(tmp, 'bin', 'python'),
      ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-r', venv.requirements],
      opts.log,
    );
    fs.writeFileSync(path.join(tmp, COMPLETE), `${new Date().toISOString()}\n`);
    fs.renameSync(tmp, final);
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (!fs.existsSync(path.join(final, COMPLETE))) throw err; // else another process made it meanwhile
  }
  opts.log(`${venv.purpose} venv ready in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return python;
}
