/**
 * Where infra keeps things: the binary cache outside the repo (shared by clones) and the
 * per-project state folder (DESIGN.md, "Infra on a developer or CI machine").
 */
import * as os from 'node:os';
import * as path from 'node:path';
import type { InfraOptions } from './types';

/** The repository root (infra/ sits at the top level). */
export const REPO_ROOT = path.resolve(__dirname, '..');

/** State folder: opts.stateDir, else STARPO_STATE_DIR, else `<repo>/.starpo/infra` (gitignored). Absolute path. */
export function resolveStateDir(opts: InfraOptions = {}): string {
  return path.resolve(opts.stateDir ?? process.env.STARPO_STATE_DIR ?? path.join(REPO_ROOT, '.starpo', 'infra'));
}

/** Cache root: opts.cacheDir, else STARPO_CACHE_DIR, else `${XDG_CACHE_HOME:-~/.cache}/starpo`. Absolute path. */
export function resolveCacheDir(opts: InfraOptions = {}): string {
  const xdg = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.resolve(opts.cacheDir ?? process.env.STARPO_CACHE_DIR ?? path.join(xdg, 'starpo'));
}

/** Folder of one installed binary package: `<cache>/bin/<name>-<version>/`. */
export function binaryInstallDir(cacheDir: string, name: string, version: string): string {
  return path.join(cacheDir, 'bin', `${name}-${version}`);
}
