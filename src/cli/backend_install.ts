/**
 * `starpo backend install [--gpu]`: builds a native TensorFlow backend (a variant of native_build.ts: CPU or
 * GPU) into the cache outside the repo (docs/backends.md, "Installing the native CPU backend"). tfjs-node's and
 * tfjs-node-gpu's own install scripts download an old libtensorflow from a storage bucket; instead the binding
 * is built here against the C library inside PyPI's TensorFlow wheel (build, below).
 */
import * as fs from 'node:fs';
import { availableParallelism } from 'node:os';
import * as path from 'node:path';
import { resolveCacheDir } from '../../infra/binaries';
import { type CommandResult, runCommand, tailLines } from '../../infra/command';
import { removeStaleTemps, tempDir } from '../../infra/install';
import { downloadWheel, sha256File, type UnpackRule, unpackWheel } from '../../infra/wheels';
import type { SmokeResult } from '../model/native_backend';
import {
  BINDING_FILE,
  inspectNativeBuild,
  MANIFEST_FILE,
  NATIVE_CPU,
  NATIVE_LIBRARIES,
  type NativeManifest,
  type NativeVariant,
  nativeBuildDir,
} from '../model/native_build';
import { type HostFacts, missingPrerequisites, probeHost } from './native_host';

/** Thrown when the build cannot be made: a missing prerequisite, or a step that failed (with its output). */
export class NativeInstallError extends Error {
  override name = 'NativeInstallError';
}

/**
 * The headers the binding's include closure needs, as paths under the wheel's `tensorflow/include/`
 * (Python fnmatch patterns: `*` also matches `/`).
 */
export const HEADER_PATTERNS = ['tensorflow/c/*.h', 'tensorflow/core/platform/ctstring*.h', 'tsl/platform/ctstring*.h', 'xla/tsl/c/*.h'];

/** What to unpack from each wheel of variant `v` into build folder `out`, by wheel file. */
export function unpackRules(v: NativeVariant, out: string): Map<string, UnpackRule[]> {
  const rules = new Map<string, UnpackRule[]>([
    [
      v.wheel.file,
      [
        { from: 'tensorflow/', patterns: [...NATIVE_LIBRARIES], to: path.join(out, 'deps', 'lib') },
        { from: 'tensorflow/include/', patterns: HEADER_PATTERNS, to: path.join(out, 'deps', 'include') },
      ],
    ],
  ]);
  for (const w of v.cudaWheels)
    rules.set(w.file, [{ from: 'nvidia/', patterns: [`${w.dir}/lib/lib*.so*`], to: path.join(out, 'deps', 'nvidia') }]);
  return rules;
}

/** node-gyp's arguments: Node's local headers, N-API 8, and the module path tfjs-node's loader looks in. */
export function nodeGypArgs(buildDir: string, nodedir: string): string[] {
  return [
    'rebuild',
    `--nodedir=${nodedir}`,
    `--napi_build_version=${NATIVE_CPU.napiVersion}`,
    '--module_name=tfjs_binding',
    `--module_path=${path.join(buildDir, path.dirname(BINDING_FILE))}`,
    `--jobs=${availableParallelism()}`,
  ];
}

/** Runs one step; a failure becomes a NativeInstallError with the command and the tail of its output. */
async function step(
  what: string,
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: Record<string, string>; timeoutSeconds?: number } = {},
): Promise<CommandResult> {
  const res = await runCommand(cmd, args, { timeoutSeconds: 900, maxChars: 8000, ...opts });
  if (res.code !== 0)
    throw new NativeInstallError(
      `${what} failed:\n  $ ${res.display}\n  exit ${res.code ?? 'none (could not start or timed out)'}:\n${tailLines(res.tail, 20)}`,
    );
  return res;
}

/** Fetches the pinned tfjs-node(-gpu) into `buildDir` (its package root) and its JS dependencies but tfjs into `buildDir/node_modules`. */
async function fetchTfjsNode(v: NativeVariant, buildDir: string): Promise<Record<string, string>> {
  const scratch = path.join(buildDir, '.npm');
  fs.mkdirSync(scratch, { recursive: true });
  const spec = `${v.tfjsNode.name}@${v.tfjsNode.version}`;
  const pack = await step(`npm pack ${spec}`, 'npm', ['pack', spec, '--loglevel=error', '--pack-destination', scratch]);
  const file = pack.tail
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l.endsWith('.tgz'));
  if (!file) throw new NativeInstallError(`npm pack ${spec} named no .tgz file:\n${tailLines(pack.tail)}`);
  const tgz = path.join(scratch, file);
  await step(`unpacking ${v.tfjsNode.name}`, 'tar', ['xzf', tgz, '--strip-components=1', '-C', buildDir]);
  const pkg = JSON.parse(fs.readFileSync(path.join(buildDir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const deps = Object.entries(pkg.dependencies).filter(([name]) => !name.startsWith('@tensorflow/'));
  fs.writeFileSync(path.join(scratch, 'package.json'), '{"private":true}\n');
  const flags = ['--ignore-scripts', '--omit=dev', '--no-package-lock', '--no-save', '--no-audit', '--no-fund'];
  await step("npm install of tfjs-node's dependencies", 'npm', ['install', ...flags, ...deps.map(([n, v]) => `${n}@${v}`)], {
    cwd: scratch,
  });
  fs.renameSync(path.join(scratch, 'node_modules'), path.join(buildDir, 'node_modules'));
  fs.rmSync(scratch, { recursive: true, force: true });
  return Object.fromEntries(
    deps.map(([name]) => [
      name,
      (JSON.parse(fs.readFileSync(path.join(buildDir, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version,
    ]),
  );
}

/** Runs the smoke test (model/native_backend.ts run as a script) of variant `v` on `buildDir` in a child process. */
export async function smokeTest(v: NativeVariant, buildDir: string): Promise<SmokeResult> {
  const script = path.resolve(__dirname, '..', 'model', 'native_backend.ts');
  const repo = path.resolve(__dirname, '..', '..'); // where `--import tsx` resolves from
  const res = await runCommand(process.execPath, ['--import', 'tsx', script, v.variant, buildDir], { cwd: repo, timeoutSeconds: 300 });
  const line = res.tail
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .pop();
  if (res.code !== 0 || !line)
    throw new NativeInstallError(`the smoke test of ${buildDir} failed:\n  $ ${res.display}\n${tailLines(res.tail, 20)}`);
  const result = JSON.parse(line) as SmokeResult;
  if (result.tfVersion !== v.wheel.version)
    throw new NativeInstallError(`the smoke test loaded TensorFlow ${result.tfVersion}, not ${v.wheel.version}`);
  if (!(result.maxAbsDiff <= 1e-4))
    throw new NativeInstallError(`the smoke test's matmul differs from the cpu backend by ${result.maxAbsDiff}`);
  return result;
}

/** What installNativeBackend did. */
export interface InstallResult {
  dir: string;
  /** true when a valid build was already there (nothing was done). */
  cached: boolean;
  manifest: NativeManifest;
}

/** sha256 and size of every file the manifest lists: the binding, TensorFlow's libraries, CUDA's. */
async function manifestFiles(v: NativeVariant, dir: string): Promise<NativeManifest['files']> {
  const cudaLibs = v.cudaWheels.flatMap((w) => {
    const lib = path.join('deps', 'nvidia', w.dir, 'lib');
    return fs
      .readdirSync(path.join(dir, lib))
      .sort()
      .map((f) => path.join(lib, f));
  });
  const files: NativeManifest['files'] = {};
  for (const rel of [BINDING_FILE, ...NATIVE_LIBRARIES.map((l) => `deps/lib/${l}`), ...cudaLibs]) {
    files[rel] = { bytes: fs.statSync(path.join(dir, rel)).size, sha256: await sha256File(path.join(dir, rel)) };
  }
  return files;
}

/**
 * Builds variant `v` into `tmp` (everything but the rename); returns the manifest written:
 * 1. `pip download` the pinned wheels (progress bar as for the server binaries) and check their sha256;
 * 2. unpack only the two shared libraries and the C headers the binding includes, and for the GPU variant the
 *    lib folders of the CUDA wheels, where the libraries' RUNPATH looks for them;
 * 3. `npm pack` the pinned tfjs-node(-gpu) and `npm install` its JS dependencies other than tfjs (the
 *    project's tfjs is used at load time, native_backend.ts);
 * 4. node-gyp with Node's local headers (no header download) into `lib/napi-v8`, where tfjs-node looks;
 * 5. a manifest with the sha256 of the binding and libraries, and a smoke test in a child process.
 * installNativeBackend then renames the temp folder into place (a crash never leaves half a build; a second
 * run is a cache hit).
 */
async function build(
  v: NativeVariant,
  tmp: string,
  host: HostFacts & { python: string },
  log: (line: string) => void,
): Promise<NativeManifest> {
  const seconds: Record<string, number> = {};
  const timed = async <T>(phase: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    const out = await fn();
    seconds[phase] = Math.round(((seconds[phase] ?? 0) + (Date.now() - t0) / 1000) * 10) / 10; // summed over the wheels
    return out;
  };
  const wheelDir = path.join(tmp, '.wheel');
  const rules = unpackRules(v, tmp);
  for (const w of [v.wheel, ...v.cudaWheels]) {
    // One wheel at a time, unpacked and deleted before the next: the download folder never holds more than one.
    const wheel = await timed('download', () => downloadWheel(host.python, w, wheelDir, v.wheel.pythonVersion, log));
    log(`unpacking ${w === v.wheel ? 'the TensorFlow libraries and C headers' : `the libraries of ${w.name}`}`);
    const unpacked = await timed('unpack', () => unpackWheel(host.python, wheel, rules.get(w.file) ?? []));
    if (w !== v.wheel && !(unpacked > 0))
      throw new NativeInstallError(`${w.file} has no libraries in nvidia/${(w as { dir: string }).dir}/lib`);
    fs.rmSync(wheelDir, { recursive: true, force: true });
  }
  const lib = path.join(tmp, 'deps', 'lib');
  const absent = NATIVE_LIBRARIES.filter((l) => !fs.existsSync(path.join(lib, l)));
  if (absent.length > 0) throw new NativeInstallError(`${v.wheel.file} has no ${absent.map((l) => `tensorflow/${l}`).join(', ')}`);
  // The binding links -ltensorflow (tfjs-node's name for the C API library, inside libtensorflow_cc here)
  // and -ltensorflow_framework; the linker wants unversioned names.
  fs.symlinkSync('libtensorflow_cc.so.2', path.join(lib, 'libtensorflow.so'));
  fs.symlinkSync('libtensorflow_framework.so.2', path.join(lib, 'libtensorflow_framework.so'));
  log(`fetching ${v.tfjsNode.name}@${v.tfjsNode.version} and its JS dependencies`);
  const runtimeDeps = await timed('npm', () => fetchTfjsNode(v, tmp));
  log(`building the binding with node-gyp (${host.compiler})`);
  await timed('compile', () =>
    step('node-gyp', process.execPath, [host.nodeGyp as string, ...nodeGypArgs(tmp, host.nodedir)], { cwd: tmp }),
  );
  fs.rmSync(path.join(tmp, 'build'), { recursive: true, force: true });
  const files = await timed('checksums', () => manifestFiles(v, tmp));
  const manifest: NativeManifest = {
    format: 1,
    variant: v.variant,
    tfjsNode: v.tfjsNode.version,
    tensorflow: { package: v.wheel.name, version: v.wheel.version, wheel: v.wheel.file, wheelSha256: v.wheel.sha256 },
    napiVersion: v.napiVersion,
    cudaWheels: Object.fromEntries(v.cudaWheels.map((w) => [w.name, { version: w.version, wheel: w.file, sha256: w.sha256 }])),
    builtWith: { node: process.version, nodedir: host.nodedir, compiler: host.compiler as string, glibc: host.glibc as string },
    builtAt: new Date().toISOString(),
    seconds,
    runtimeDeps,
    files,
  };
  fs.writeFileSync(path.join(tmp, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`); // the smoke test loads through it
  log('smoke test: loading the build in a child process');
  const smoke = await timed('smoke', () => smokeTest(v, tmp));
  fs.rmSync(smoke.shim, { recursive: true, force: true }); // the shim of the temp path; the final path gets its own
  log(
    `smoke test ok: TensorFlow ${smoke.tfVersion} on ${smoke.device}, matmul equal to the cpu backend within ${smoke.maxAbsDiff.toExponential(1)}`,
  );
  fs.writeFileSync(path.join(tmp, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`); // again, with the smoke test's seconds
  return manifest;
}

/**
 * Installs a native backend into `<cache>/native/<build name>/`, or returns the build already there.
 * @param opts.variant NATIVE_CPU (default) or NATIVE_GPU
 * @param opts.force rebuild even when a valid build exists (it is replaced only once the new one passed)
 * @throws NativeInstallError naming a missing prerequisite and how to get it, or the step that failed
 */
export async function installNativeBackend(opts: {
  variant?: NativeVariant;
  cacheDir?: string;
  force?: boolean;
  log: (line: string) => void;
}): Promise<InstallResult> {
  const v = opts.variant ?? NATIVE_CPU;
  const final = nativeBuildDir(v, opts.cacheDir ?? resolveCacheDir());
  const existing = inspectNativeBuild(v, final);
  if (existing.state === 'installed' && !opts.force) return { dir: final, cached: true, manifest: existing.manifest };
  const host = await probeHost();
  const missing = missingPrerequisites(host);
  if (missing.length > 0)
    throw new NativeInstallError(`cannot build the native TensorFlow backend on this host:\n${missing.map((m) => `  - ${m}`).join('\n')}`);
  fs.mkdirSync(path.dirname(final), { recursive: true });
  removeStaleTemps(path.dirname(final), path.basename(final));
  opts.log(`building the native TensorFlow ${v.variant.toUpperCase()} backend into ${final}`);
  const tmp = tempDir(final);
  try {
    const manifest = await build(v, tmp, { ...host, python: host.python as string }, opts.log);
    if (existing.state !== 'missing') fs.renameSync(final, `${tmp}-old`);
    fs.renameSync(tmp, final);
    fs.rmSync(`${tmp}-old`, { recursive: true, force: true });
    return { dir: final, cached: false, manifest };
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    const won = inspectNativeBuild(v, final); // another install finished first: keep theirs
    if (won.state === 'installed' && !opts.force) return { dir: final, cached: true, manifest: won.manifest };
    throw err;
  }
}
