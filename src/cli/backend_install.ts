/**
 * `starpo backend install`: builds the native TensorFlow CPU backend into the cache outside the repo
 * (DESIGN.md, "Workers and compute"). tfjs-node's own install script downloads an old libtensorflow from a
 * storage bucket; instead its binding is built here against the C library inside PyPI's TensorFlow wheel:
 * 1. `pip download` the pinned wheel (progress bar as for the server binaries) and check its sha256;
 * 2. unpack only the two shared libraries and the C headers the binding includes;
 * 3. `npm pack` the pinned tfjs-node and `npm install` its JS dependencies other than tfjs (the project's
 *    tfjs is used at load time, native_backend.ts);
 * 4. node-gyp with Node's local headers (no header download) into `lib/napi-v8`, where tfjs-node looks;
 * 5. a manifest with the sha256 of the binding and libraries, a smoke test in a child process, and the
 *    rename of the temp folder into place (a crash never leaves half a build; a second run is a cache hit).
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { availableParallelism } from 'node:os';
import { runCommand, tailLines, type CommandResult } from '../../infra/command';
import { removeStaleTemps, runPip, tempDir } from '../../infra/install';
import { installProgress } from '../../infra/install_progress';
import { resolveCacheDir } from '../../infra/paths';
import { BINDING_FILE, inspectNativeBuild, MANIFEST_FILE, NATIVE_CPU, NATIVE_LIBRARIES, nativeBuildDir, type NativeManifest } from '../model/native_build';
import type { SmokeResult } from '../model/native_smoke';
import { missingPrerequisites, probeHost, type HostFacts } from './native_host';

/** Thrown when the build cannot be made: a missing prerequisite, or a step that failed (with its output). */
export class NativeInstallError extends Error {
  override name = 'NativeInstallError';
}

/**
 * The headers the binding's include closure needs, as paths under the wheel's `tensorflow/include/`
 * (Python fnmatch patterns: `*` also matches `/`).
 */
export const HEADER_PATTERNS = ['tensorflow/c/*.h', 'tensorflow/core/platform/ctstring*.h', 'tsl/platform/ctstring*.h', 'xla/tsl/c/*.h'];

/**
 * Unpacks the libraries into `<out>/deps/lib` and the headers into `<out>/deps/include`, streaming (the C++
 * library alone is ~790 MB). Python's zipfile, because pip already needs Python. Prints the file count.
 */
const UNPACK_PY = `
import fnmatch, os, shutil, sys, zipfile
wheel, out, libs, patterns = sys.argv[1], sys.argv[2], sys.argv[3].split(','), sys.argv[4].split(',')
count = 0
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.endswith('/'):
            continue
        rel = name[len('tensorflow/'):] if name.startswith('tensorflow/') else None
        if rel in libs:
            dest = os.path.join(out, 'deps', 'lib', rel)
        elif rel and rel.startswith('include/') and any(fnmatch.fnmatch(rel[len('include/'):], p) for p in patterns):
            dest = os.path.join(out, 'deps', rel)
        else:
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with z.open(name) as src, open(dest, 'wb') as dst:
            shutil.copyfileobj(src, dst, 1 << 22)
        count += 1
print(count)
`;

/** The pip command that fetches exactly the pinned wheel, whatever Python runs pip. */
export function pipDownloadArgs(dest: string): string[] {
  const w = NATIVE_CPU.wheel;
  return [
    '-m', 'pip', 'download', `${w.name}==${w.version}`, '--no-deps', '--only-binary=:all:',
    '--python-version', w.pythonVersion, '--implementation', 'cp', '--platform', w.platform,
    '--dest', dest, '--disable-pip-version-check', '--no-input',
  ];
}

/** node-gyp's arguments: Node's local headers, N-API 8, and the module path tfjs-node's loader looks in. */
export function nodeGypArgs(buildDir: string, nodedir: string): string[] {
  return [
    'rebuild', `--nodedir=${nodedir}`, `--napi_build_version=${NATIVE_CPU.napiVersion}`,
    '--module_name=tfjs_binding', `--module_path=${path.join(buildDir, path.dirname(BINDING_FILE))}`,
    `--jobs=${availableParallelism()}`,
  ];
}

/** sha256 of a file, streamed. */
function sha256File(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    fs.createReadStream(file).on('data', (chunk) => hash.update(chunk)).on('error', reject).on('end', () => resolve(hash.digest('hex')));
  });
}

/** Runs one step; a failure becomes a NativeInstallError with the command and the tail of its output. */
async function step(what: string, cmd: string, args: string[], opts: { cwd?: string; env?: Record<string, string>; timeoutSeconds?: number } = {}): Promise<CommandResult> {
  const res = await runCommand(cmd, args, { timeoutSeconds: 900, maxChars: 8000, ...opts });
  if (res.code !== 0) throw new NativeInstallError(`${what} failed:\n  $ ${res.display}\n  exit ${res.code ?? 'none (could not start or timed out)'}:\n${tailLines(res.tail, 20)}`);
  return res;
}

/** Downloads the pinned wheel into `dir` and checks its sha256. Returns its path. */
async function downloadWheel(python: string, dir: string, log: (line: string) => void): Promise<string> {
  const progress = installProgress(`${NATIVE_CPU.wheel.name} ${NATIVE_CPU.wheel.version}`, log);
  let res: CommandResult;
  try {
    res = await runPip(python, pipDownloadArgs(dir), dir, progress);
  } finally {
    progress.stop();
  }
  if (res.code !== 0) throw new NativeInstallError(`pip could not download ${NATIVE_CPU.wheel.file}:\n  $ ${res.display}\n${tailLines(res.tail, 20)}`);
  const wheel = path.join(dir, NATIVE_CPU.wheel.file);
  if (!fs.existsSync(wheel)) throw new NativeInstallError(`pip succeeded but ${wheel} is missing (found: ${fs.readdirSync(dir).join(', ')})`);
  const sha = await sha256File(wheel);
  if (sha !== NATIVE_CPU.wheel.sha256) throw new NativeInstallError(`${wheel} has sha256 ${sha}, not the pinned ${NATIVE_CPU.wheel.sha256}`);
  return wheel;
}

/** Fetches the pinned tfjs-node into `buildDir` (its package root) and its JS dependencies but tfjs into `buildDir/node_modules`. */
async function fetchTfjsNode(buildDir: string): Promise<Record<string, string>> {
  const scratch = path.join(buildDir, '.npm');
  fs.mkdirSync(scratch, { recursive: true });
  const spec = `${NATIVE_CPU.tfjsNode.name}@${NATIVE_CPU.tfjsNode.version}`;
  const pack = await step(`npm pack ${spec}`, 'npm', ['pack', spec, '--loglevel=error', '--pack-destination', scratch]);
  const file = pack.tail.split('\n').map((l) => l.trim()).find((l) => l.endsWith('.tgz'));
  if (!file) throw new NativeInstallError(`npm pack ${spec} named no .tgz file:\n${tailLines(pack.tail)}`);
  const tgz = path.join(scratch, file);
  await step('unpacking tfjs-node', 'tar', ['xzf', tgz, '--strip-components=1', '-C', buildDir]);
  const pkg = JSON.parse(fs.readFileSync(path.join(buildDir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const deps = Object.entries(pkg.dependencies).filter(([name]) => !name.startsWith('@tensorflow/'));
  fs.writeFileSync(path.join(scratch, 'package.json'), '{"private":true}\n');
  const flags = ['--ignore-scripts', '--omit=dev', '--no-package-lock', '--no-save', '--no-audit', '--no-fund'];
  await step("npm install of tfjs-node's dependencies", 'npm', ['install', ...flags, ...deps.map(([n, v]) => `${n}@${v}`)], { cwd: scratch });
  fs.renameSync(path.join(scratch, 'node_modules'), path.join(buildDir, 'node_modules'));
  fs.rmSync(scratch, { recursive: true, force: true });
  return Object.fromEntries(deps.map(([name]) => [name, (JSON.parse(fs.readFileSync(path.join(buildDir, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version]));
}

/** Runs the smoke test (native_smoke.ts) on `buildDir` in a child process. */
export async function smokeTest(buildDir: string): Promise<SmokeResult> {
  const script = path.resolve(__dirname, '..', 'model', 'native_smoke.ts');
  const repo = path.resolve(__dirname, '..', '..'); // where `--import tsx` resolves from
  const res = await runCommand(process.execPath, ['--import', 'tsx', script, buildDir], { cwd: repo, timeoutSeconds: 300 });
  const line = res.tail.split('\n').filter((l) => l.startsWith('{')).pop();
  if (res.code !== 0 || !line) throw new NativeInstallError(`the smoke test of ${buildDir} failed:\n  $ ${res.display}\n${tailLines(res.tail, 20)}`);
  const result = JSON.parse(line) as SmokeResult;
  if (result.tfVersion !== NATIVE_CPU.wheel.version) throw new NativeInstallError(`the smoke test loaded TensorFlow ${result.tfVersion}, not ${NATIVE_CPU.wheel.version}`);
  if (!(result.maxAbsDiff <= 1e-4)) throw new NativeInstallError(`the smoke test's matmul differs from the cpu backend by ${result.maxAbsDiff}`);
  return result;
}

/** What installNativeBackend did. */
export interface InstallResult {
  dir: string;
  /** true when a valid build was already there (nothing was done). */
  cached: boolean;
  manifest: NativeManifest;
}

/** Builds into `tmp` (everything but the rename); returns the manifest written. */
async function build(tmp: string, host: HostFacts & { python: string }, log: (line: string) => void): Promise<NativeManifest> {
  const seconds: Record<string, number> = {};
  const timed = async <T>(phase: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    const out = await fn();
    seconds[phase] = Math.round((Date.now() - t0) / 100) / 10;
    return out;
  };
  const wheelDir = path.join(tmp, '.wheel');
  const wheel = await timed('download', () => downloadWheel(host.python, wheelDir, log));
  log('unpacking the TensorFlow libraries and C headers');
  await timed('unpack', () => step('unpacking the wheel', host.python, ['-c', UNPACK_PY, wheel, tmp, NATIVE_LIBRARIES.join(','), HEADER_PATTERNS.join(',')]));
  fs.rmSync(wheelDir, { recursive: true, force: true });
  const lib = path.join(tmp, 'deps', 'lib');
  const absent = NATIVE_LIBRARIES.filter((l) => !fs.existsSync(path.join(lib, l)));
  if (absent.length > 0) throw new NativeInstallError(`${NATIVE_CPU.wheel.file} has no ${absent.map((l) => `tensorflow/${l}`).join(', ')}`);
  // The binding links -ltensorflow (tfjs-node's name for the C API library, inside libtensorflow_cc here)
  // and -ltensorflow_framework; the linker wants unversioned names.
  fs.symlinkSync('libtensorflow_cc.so.2', path.join(lib, 'libtensorflow.so'));
  fs.symlinkSync('libtensorflow_framework.so.2', path.join(lib, 'libtensorflow_framework.so'));
  log(`fetching ${NATIVE_CPU.tfjsNode.name}@${NATIVE_CPU.tfjsNode.version} and its JS dependencies`);
  const runtimeDeps = await timed('npm', () => fetchTfjsNode(tmp));
  log(`building the binding with node-gyp (${host.compiler})`);
  await timed('compile', () => step('node-gyp', process.execPath, [host.nodeGyp as string, ...nodeGypArgs(tmp, host.nodedir)], { cwd: tmp }));
  fs.rmSync(path.join(tmp, 'build'), { recursive: true, force: true });
  const files: NativeManifest['files'] = {};
  for (const rel of [BINDING_FILE, ...NATIVE_LIBRARIES.map((l) => `deps/lib/${l}`)]) {
    files[rel] = { bytes: fs.statSync(path.join(tmp, rel)).size, sha256: await sha256File(path.join(tmp, rel)) };
  }
  const manifest: NativeManifest = {
    format: 1,
    variant: NATIVE_CPU.variant,
    tfjsNode: NATIVE_CPU.tfjsNode.version,
    tensorflow: { package: NATIVE_CPU.wheel.name, version: NATIVE_CPU.wheel.version, wheel: NATIVE_CPU.wheel.file, wheelSha256: NATIVE_CPU.wheel.sha256 },
    napiVersion: NATIVE_CPU.napiVersion,
    builtWith: { node: process.version, nodedir: host.nodedir, compiler: host.compiler as string, glibc: host.glibc as string },
    builtAt: new Date().toISOString(),
    seconds,
    runtimeDeps,
    files,
  };
  fs.writeFileSync(path.join(tmp, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`); // the smoke test loads through it
  log('smoke test: loading the build in a child process');
  const smoke = await timed('smoke', () => smokeTest(tmp));
  fs.rmSync(smoke.shim, { recursive: true, force: true }); // the shim of the temp path; the final path gets its own
  log(`smoke test ok: TensorFlow ${smoke.tfVersion}, matmul equal to the cpu backend within ${smoke.maxAbsDiff.toExponential(1)}`);
  fs.writeFileSync(path.join(tmp, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`); // again, with the smoke test's seconds
  return manifest;
}

/**
 * Installs the native CPU backend into `<cache>/native/<build name>/`, or returns the build already there.
 * @param opts.force rebuild even when a valid build exists (it is replaced only once the new one passed)
 * @throws NativeInstallError naming a missing prerequisite and how to get it, or the step that failed
 */
export async function installNativeBackend(opts: { cacheDir?: string; force?: boolean; log: (line: string) => void }): Promise<InstallResult> {
  const final = nativeBuildDir(opts.cacheDir ?? resolveCacheDir());
  const existing = inspectNativeBuild(final);
  if (existing.state === 'installed' && !opts.force) return { dir: final, cached: true, manifest: existing.manifest };
  const host = await probeHost();
  const missing = missingPrerequisites(host);
  if (missing.length > 0) throw new NativeInstallError(`cannot build the native TensorFlow backend on this host:\n${missing.map((m) => `  - ${m}`).join('\n')}`);
  fs.mkdirSync(path.dirname(final), { recursive: true });
  removeStaleTemps(path.dirname(final), path.basename(final));
  opts.log(`building the native TensorFlow backend into ${final}`);
  const tmp = tempDir(final);
  try {
    const manifest = await build(tmp, { ...host, python: host.python as string }, opts.log);
    if (existing.state !== 'missing') fs.renameSync(final, `${tmp}-old`);
    fs.renameSync(tmp, final);
    fs.rmSync(`${tmp}-old`, { recursive: true, force: true });
    return { dir: final, cached: false, manifest };
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    const won = inspectNativeBuild(final); // another install finished first: keep theirs
    if (won.state === 'installed' && !opts.force) return { dir: final, cached: true, manifest: won.manifest };
    throw err;
  }
}
