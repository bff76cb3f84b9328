/** The Python venv the benches run PyTorch, transformers and PEFT in: the pins of test/fixtures/hf/requirements.txt. */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

const VENV = join(homedir(), '.cache/starpo/hf-venv');
const REQUIREMENTS = join(__dirname, '../../test/fixtures/hf/requirements.txt');

/** The venv's python, made from PyPI on first use, or null (said why) when there is no python3. */
export function pythonFor(): string | null {
  const python = join(VENV, 'bin/python');
  const pins = readFileSync(REQUIREMENTS, 'utf8');
  const check = "import torch, transformers, safetensors, peft; print(torch.__version__.split('+')[0], transformers.__version__)";
  const ok = existsSync(python) && spawnSync(python, ['-c', check], { encoding: 'utf8' }).status === 0;
  if (ok) return python;
  if (spawnSync('python3', ['--version']).status !== 0) {
    console.log('no python3 on this host: the PyTorch side is skipped');
    return null;
  }
  console.log(`making the PyTorch venv in ${VENV} from PyPI (${pins.trim().split('\n').join(', ')}); once`);
  for (const cmd of [
    ['python3', ['-m', 'venv', VENV]],
    [join(VENV, 'bin/pip'), ['install', '--quiet', '-r', REQUIREMENTS]],
  ] as const) {
    const r = spawnSync(cmd[0], [...cmd[1]], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`${cmd[0]} ${cmd[1].join(' ')} failed (exit ${r.status})`);
  }
  return python;
}
