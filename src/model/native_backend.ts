/**
 * Loads a native TensorFlow build (CPU or GPU) from the cache, where `starpo backend install [--gpu]` keeps it
 * (native_build.ts), through a shim folder in node_modules (ensureShim) so that it registers with this
 * project's own tfjs engine. Run as a script, this file is the smoke test of a build (`smokeTest`).
 */
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import {
  BINDING_FILE,
  installCommand,
  NATIVE_CPU,
  NATIVE_VARIANTS,
  NativeBackendError,
  type NativeManifest,
  type NativeVariant,
  nativeBuildDir,
  requireInstalled,
} from './native_build';

/** The node_modules folder holding the `@tensorflow/tfjs` this project resolves. */
function projectNodeModules(): string {
  return path.resolve(require.resolve('@tensorflow/tfjs/package.json'), '..', '..', '..');
}

/** Copies package.json and dist's JS (not tests) of `buildDir` into `to`. */
function copyJs(buildDir: string, to: string): void {
  fs.cpSync(path.join(buildDir, 'package.json'), path.join(to, 'package.json'));
  fs.cpSync(path.join(buildDir, 'dist'), path.join(to, 'dist'), {
    recursive: true,
    filter: (src) => fs.statSync(src).isDirectory() || (src.endsWith('.js') && !src.endsWith('_test.js')),
  });
}

/** Removes shims whose build is gone (a rebuilt build, a temporary one of a failed install). Never throws. */
function removeOrphanShims(parent: string): void {
  try {
    for (const entry of fs.readdirSync(parent)) {
      const dir = path.join(parent, entry);
      if (!entry.startsWith('.tmp-') && !fs.existsSync(path.join(dir, 'lib'))) fs.rmSync(dir, { recursive: true, force: true }); // dangling `lib` symlink
    }
  } catch {
    /* best effort */
  }
}

/**
 * The shim folder for `buildDir`, written when missing. Why a shim: tfjs-node's JS requires `@tensorflow/tfjs`
 * (and through it tfjs-core), and Node resolves that by walking up from the requiring file. From the cache it
 * would never reach this project's node_modules, and a second tfjs-core would be a second engine that the model
 * never sees. So the small JS part (package.json and dist/*.js) is copied into
 * `<node_modules>/.cache/starpo-native/<id>/`, inside the node_modules folder that holds this project's
 * `@tensorflow/tfjs`: walking up from there reaches it. Beside the copy, symlinks lead to the cache for the
 * rest: `lib` (the binding; Node loads it by its real path, so its RUNPATH `$ORIGIN/../../deps/lib` finds the
 * libraries in the cache), `deps` and `node_modules` (tfjs-node's other JS dependencies, found before the walk
 * goes further up; @tensorflow packages are not among them). tfjs-node's files run unmodified. `npm ci` removes
 * the copy with node_modules; the next load writes it again (tmp folder + rename, so concurrent workers are
 * safe). Its name hashes the build's real path and manifest, so a rebuilt or moved build gets a fresh shim.
 * @throws NativeBackendError when the folder cannot be written (node_modules read-only)
 */
export function ensureShim(buildDir: string, manifest: NativeManifest): string {
  const real = fs.realpathSync(buildDir);
  const id = createHash('sha256').update(real).update(JSON.stringify(manifest)).digest('hex').slice(0, 12);
  const parent = path.join(projectNodeModules(), '.cache', 'starpo-native');
  const shim = path.join(parent, `${path.basename(real)}-${id}`);
  if (fs.existsSync(path.join(shim, 'dist', 'index.js'))) return shim;
  const tmp = path.join(parent, `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    fs.mkdirSync(tmp, { recursive: true });
    copyJs(real, tmp);
    for (const link of ['lib', 'deps', 'node_modules']) fs.symlinkSync(path.join(real, link), path.join(tmp, link));
    fs.renameSync(tmp, shim);
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (!fs.existsSync(path.join(shim, 'dist', 'index.js'))) {
      // else another process wrote it first
      throw new NativeBackendError(
        `cannot write ${shim}, the copy of tfjs-node's JS that loads the native build with this project's tfjs: ${(err as Error).message}`,
      );
    }
  }
  removeOrphanShims(parent);
  return shim;
}

/** What loadNativeBuild loaded. */
export interface NativeLoad {
  /** The build folder in the cache. */
  dir: string;
  /** The shim folder that was required. */
  shim: string;
  /** TensorFlow's version as the binding reports it (TF_Version). */
  tfVersion: string;
  /** The binding places ops on a GPU (it found a GPU device when it created its TensorFlow context). */
  gpu: boolean;
  /** Whether the process mapped the CUDA driver library (libcuda.so.1); always false for the CPU build. */
  cudaDriver: boolean;
}

/**
 * Requires the native build of variant `v` from `buildDir`, which registers the 'tensorflow' backend with this
 * project's tfjs engine. Checks first that the project's tfjs-core is the version the build was made for and
 * that the shim resolves the very same tfjs-core file, then that the backend registered with this engine (one
 * instance). For the GPU build two variables get defaults first (a user's own setting wins):
 * TF_FORCE_GPU_ALLOW_GROWTH=true, as TensorFlow otherwise reserves nearly all GPU memory at start and starves
 * other processes on the same GPU; NVIDIA_TF32_OVERRIDE=0, as cuBLAS and cuDNN otherwise run float32 matmuls
 * and convolutions in TF32 (a 10-bit mantissa) on Ampere and newer GPUs, and the model computes in float32.
 * @throws NativeBackendError when the build is missing or broken, or the versions or the engine differ
 */
export function loadNativeBuild(v: NativeVariant = NATIVE_CPU, buildDir: string = nativeBuildDir(v)): NativeLoad {
  const build = requireInstalled(v, buildDir);
  const core = require('@tensorflow/tfjs-core/package.json') as { version: string };
  if (core.version !== build.manifest.tfjsNode) {
    throw new NativeBackendError(
      `the native build is ${v.tfjsNode.name}@${build.manifest.tfjsNode}, made for tfjs-core ${build.manifest.tfjsNode}, but this project has tfjs-core ${core.version}; ` +
        `pin the matching ${v.tfjsNode.name} version in src/model/native_build.ts and run ${installCommand(v)}`,
    );
  }
  const shim = ensureShim(build.dir, build.manifest);
  const own = require.resolve('@tensorflow/tfjs-core');
  const theirs = require.resolve('@tensorflow/tfjs-core', { paths: [path.join(shim, 'dist')] });
  if (own !== theirs)
    throw new NativeBackendError(`the native backend would load a second tfjs-core (${theirs}, not ${own}); remove ${shim} and retry`);
  if (v.variant === 'gpu') {
    process.env.TF_FORCE_GPU_ALLOW_GROWTH ??= 'true';
    process.env.NVIDIA_TF32_OVERRIDE ??= '0';
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require(shim);
  if (!tf.findBackendFactory('tensorflow'))
    throw new NativeBackendError(`${shim} loaded but registered no 'tensorflow' backend with this project's tfjs engine`);
  const binding = bindingOf(shim);
  return {
    dir: build.dir,
    shim,
    tfVersion: binding.TF_Version,
    gpu: binding.isUsingGpuDevice(),
    cudaDriver: v.variant === 'gpu' && cudaDriverMapped(),
  };
}

/**
 * The loaded binding (Node caches the module, so this loads nothing new). It created its TensorFlow context,
 * and chose its device, when it was loaded.
 */
function bindingOf(shim: string): { TF_Version: string; isUsingGpuDevice(): boolean } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(path.join(shim, BINDING_FILE)) as { TF_Version: string; isUsingGpuDevice(): boolean };
}

/** true when this process has libcuda (the host's CUDA driver) mapped: TensorFlow found and opened it. */
function cudaDriverMapped(): boolean {
  try {
    return /\/libcuda\.so/.test(fs.readFileSync('/proc/self/maps', 'utf8'));
  } catch {
    return false;
  }
}

/** What the smoke test printed. */
export interface SmokeResult {
  tfVersion: string;
  /** The shim folder it loaded through (the caller removes it for a temporary build). */
  shim: string;
  /** max |native - cpu| over a 64x48 @ 48x32 matmul. */
  maxAbsDiff: number;
  /** The device the binding computes on: 'GPU' or 'CPU'. */
  device: 'GPU' | 'CPU';
  /** The process mapped the host's CUDA driver (libcuda.so.1); false for the CPU build. */
  cudaDriver: boolean;
}

/** The matmul both backends compute (seeded, so both see the same operands). */
function product(): Float32Array {
  return tf.tidy(
    () =>
      tf.matMul(tf.randomNormal([64, 48], 0, 1, 'float32', 1), tf.randomNormal([48, 32], 0, 1, 'float32', 2)).dataSync() as Float32Array,
  );
}

/**
 * Smoke test of a native build, run in a child process (`node --import tsx native_backend.ts <cpu|gpu> <buildDir>`)
 * so the caller never loads TensorFlow itself: loads the build, checks that it registered with this project's
 * tfjs engine, and compares a seeded matmul with the pure-JS cpu backend. Prints one JSON line (SmokeResult).
 */
async function smokeTest(variant: string, buildDir: string): Promise<void> {
  const v = NATIVE_VARIANTS.find((x) => x.variant === variant);
  if (!v) throw new Error(`native smoke test: variant "${variant}" is not one of ${NATIVE_VARIANTS.map((x) => x.variant).join(', ')}`);
  const load = loadNativeBuild(v, buildDir);
  await tf.setBackend('tensorflow');
  const native = product();
  await tf.setBackend('cpu');
  const cpu = product();
  const maxAbsDiff = native.reduce((m, v, i) => Math.max(m, Math.abs(v - (cpu[i] as number))), 0);
  const result: SmokeResult = {
    tfVersion: load.tfVersion,
    shim: load.shim,
    maxAbsDiff,
    device: load.gpu ? 'GPU' : 'CPU',
    cudaDriver: load.cudaDriver,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

if (require.main === module) {
  smokeTest(process.argv[2] as string, process.argv[3] as string).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
