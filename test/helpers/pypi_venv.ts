/**
 * A venv of pinned PyPI packages for a test that checks starpo against the real Python tool (TensorBoard's
 * readers, an MLflow server): made on first use at ~/.cache/starpo/<name>, reused while `module` imports.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The venv's bin folder, made from `requirements` (a requirements.txt) when `module` does not import there.
 * @throws Error when the venv cannot be made
 */
export function venvBin(name: string, requirements: string, module: string): string {
  const venv = join(homedir(), '.cache/starpo', name);
  const bin = join(venv, 'bin');
  const py = join(bin, 'python');
  if (existsSync(py) && spawnSync(py, ['-c', `import ${module}`], { encoding: 'utf8' }).status === 0) return bin;
  for (const [cmd, args] of [
    ['python3', ['-m', 'venv', venv]],
    [join(bin, 'pip'), ['install', '--quiet', '-r', requirements]],
  ] as const) {
    const r = spawnSync(cmd, [...args], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status})`);
  }
  return bin;
}
