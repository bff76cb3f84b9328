/**
 * The native TensorFlow build in the cache outside the repo (docs/backends.md): what is
 * pinned, where it lives, and its manifest. `starpo backend install` writes it; backend loading reads it.
 * The folder name carries every pin, so bumping one makes a new folder and old clones keep theirs.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { resolveCacheDir } from '../../infra/binaries';
import type { WheelPin } from '../../infra/wheels';

/** A CUDA library wheel: its `nvidia/<dir>/lib` folder is unpacked beside the TensorFlow libraries. */
export interface CudaWheelPin extends WheelPin {
  dir: string;
}

/** What one native build is made of: the tfjs-node package whose binding is built, the TensorFlow wheel, and the CUDA wheels. */
export interface NativeVariant {
  variant: 'cpu' | 'gpu';
  /** The backend name that loads this build. */
  backend: 'tensorflow' | 'tensorflow-gpu';
  tfjsNode: { name: string; version: string };
  wheel: WheelPin & {
    /** The C library inside is the same for every Python tag; this one is asked for explicitly so the host's Python does not matter. */
    pythonVersion: string;
  };
  /** Unpacked into `deps/nvidia/<dir>/lib`, where the TensorFlow libraries' RUNPATH (`$ORIGIN/../nvidia/<dir>/lib`) finds them. */
  cudaWheels: readonly CudaWheelPin[];
  /** The TensorFlow wheel's manylinux tag: the oldest glibc its libraries run on. */
  minGlibc: string;
  /** The N-API version built for; tfjs-node's loader looks in `lib/napi-v<this>`. */
  napiVersion: number;
}

/** The CPU build: tfjs-node against the TensorFlow C library of `tensorflow-cpu`. */
export const NATIVE_CPU: NativeVariant = {
  variant: 'cpu',
  backend: 'tensorflow',
  tfjsNode: { name: '@tensorflow/tfjs-node', version: '4.22.0' },
  wheel: {
    name: 'tensorflow-cpu',
    version: '2.21.0',
    pythonVersion: '311',
    platform: 'manylinux_2_27_x86_64',
    file: 'tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl',
    sha256: '2b847d217b02ee7731ed91431daf3250daa0196c3c94614d23be27232e6e5b6c',
  },
  cudaWheels: [],
  minGlibc: '2.27',
  napiVersion: 8,
};

/** A CUDA wheel of PyPI's `manylinux2014_x86_64` tag (all of them but NCCL's, which carries two tags). */
const cuda = (name: string, dir: string, version: string, sha256: string, tags = 'manylinux2014_x86_64'): CudaWheelPin => ({
  name,
  dir,
  version,
  platform: 'manylinux2014_x86_64',
  file: `${name.replace(/-/g, '_')}-${version}-py3-none-${tags}.whl`,
  sha256,
});

/**
 * The GPU build: tfjs-node-gpu (the same sources as tfjs-node; its install script, which downloads an old
 * libtensorflow, is never run) against the C library of `tensorflow`, with the CUDA 12 / cuDNN 9 wheels of its
 * `and-cuda` extra. That extra names lower bounds; they are the versions TensorFlow was built with, so those
 * are pinned. nvidia-cuda-nvcc-cu12 is left out: its lib folder is empty, and its ptxas and libdevice serve
 * only XLA's JIT, which tfjs does not use. Only the driver (libcuda.so.1) comes from the host.
 */
export const NATIVE_GPU: NativeVariant = {
  variant: 'gpu',
  backend: 'tensorflow-gpu',
  tfjsNode: { name: '@tensorflow/tfjs-node-gpu', version: '4.22.0' },
  wheel: {
    name: 'tensorflow',
    version: '2.21.0',
    pythonVersion: '311',
    platform: 'manylinux_2_27_x86_64',
    file: 'tensorflow-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl',
    sha256: '9056fbc9ba04235810b71ae6cbd958a196e8804fb53bbcffbf3e23b56155f124',
  },
  cudaWheels: [
    cuda('nvidia-cuda-runtime-cu12', 'cuda_runtime', '12.5.82', '3e79a060e126df40fd3a068f3f787eb000fa51b251ec6cd97d09579632687115'),
    cuda('nvidia-cublas-cu12', 'cublas', '12.5.3.2', 'ca070ad70e9fa6654084575d01bd001f30cc4665e33d4bb9fc8e0f321caa034b'),
    cuda('nvidia-cudnn-cu12', 'cudnn', '9.3.0.75', '9ad9c6929ebb5295eb4a1728024666d1c88283373e265a0c5c883e6f9d5cd76d'),
    cuda('nvidia-cufft-cu12', 'cufft', '11.2.3.61', '9a6e8df162585750f61983a638104a48c756aa13f9f48e19ab079b38e3c828b8'),
    cuda('nvidia-curand-cu12', 'curand', '10.3.6.82', '2823fb27de4e44dbb22394a6adf53aa6e1b013aca0f8c22867d1cfae58405536'),
    cuda('nvidia-cusolver-cu12', 'cusolver', '11.6.3.83', '93cfafacde4428b71778eeb092ec615a02a3d05404da1bcf91c53e3fa1bce42b'),
    cuda('nvidia-cusparse-cu12', 'cusparse', '12.5.1.3', '016df8e993c437e8301e62739f01775cba988fd5253cd4c64173f8e8d2f8e752'),
    cuda('nvidia-nvjitlink-cu12', 'nvjitlink', '12.5.82', 'f9b37bc5c8cf7509665cb6ada5aaa0ce65618f2332b7d3e78e9790511f111212'),
    cuda('nvidia-cuda-nvrtc-cu12', 'cuda_nvrtc', '12.5.82', '3dbd97b0104b4bfbc3c4f8c79cd2496307c89c43c29a9f83125f1d76296ff3fd'),
    cuda('nvidia-cuda-cupti-cu12', 'cuda_cupti', '12.5.82', 'bde77a5feb66752ec61db2adfe47f56b941842825b4c7e2068aff27c9d107953'),
    cuda(
      'nvidia-nccl-cu12',
      'nccl',
      '2.27.7',
      'de5ba5562f08029a19cb1cd659404b18411ed0d6c90ac5f52f30bf99ad5809aa',
      'manylinux2014_x86_64.manylinux_2_17_x86_64',
    ),
  ],
  minGlibc: '2.27',
  napiVersion: 8,
};

/** Every variant, CPU first. */
export const NATIVE_VARIANTS: readonly NativeVariant[] = [NATIVE_CPU, NATIVE_GPU];

/** The variant a native backend name loads. */
export function variantOf(backend: 'tensorflow' | 'tensorflow-gpu'): NativeVariant {
  return backend === 'tensorflow-gpu' ? NATIVE_GPU : NATIVE_CPU;
}

/** The shared libraries the binding links, in `deps/lib` of a build. */
export const NATIVE_LIBRARIES = ['libtensorflow_cc.so.2', 'libtensorflow_framework.so.2'] as const;

/** The binding, relative to a build folder (where tfjs-node's own loader finds it); N-API 8 for both variants. */
export const BINDING_FILE = `lib/napi-v${NATIVE_CPU.napiVersion}/tfjs_binding.node`;

/** The pins a build is made from, as the manifest records them (a CPU build records no CUDA wheels). */
function pinsOf(v: NativeVariant): { variant: string; tfjsNode: string; wheel: string; napiVersion: number; cudaWheels: string[] } {
  return {
    variant: v.variant,
    tfjsNode: v.tfjsNode.version,
    wheel: v.wheel.file,
    napiVersion: v.napiVersion,
    cudaWheels: v.cudaWheels.map((w) => w.file),
  };
}

/**
 * Name of a build folder: every pin in it. The GPU build's eleven CUDA wheels are named by the CUDA runtime's
 * and cuDNN's versions plus a hash of all their files, so changing any pin still makes a new folder.
 */
export function nativeBuildName(v: NativeVariant = NATIVE_CPU): string {
  const pkg = v.tfjsNode.name.replace('@tensorflow/', '');
  const base = `${pkg}-${v.tfjsNode.version}-${v.wheel.name}-${v.wheel.version}`;
  if (v.cudaWheels.length === 0) return `${base}-napi${v.napiVersion}`;
  const version = (dir: string) => v.cudaWheels.find((w) => w.dir === dir)?.version ?? 'none';
  const hash = createHash('sha256')
    .update(v.cudaWheels.map((w) => w.sha256).join(','))
    .digest('hex')
    .slice(0, 8);
  return `${base}-cuda${version('cuda_runtime')}-cudnn${version('cudnn')}-${hash}-napi${v.napiVersion}`;
}

/** The folder of a build: `<cache>/native/<nativeBuildName(v)>`. Absolute path. */
export function nativeBuildDir(v: NativeVariant = NATIVE_CPU, cacheDir: string = resolveCacheDir()): string {
  return path.join(cacheDir, 'native', nativeBuildName(v));
}

const FileEntry = z.object({ bytes: z.number().int().nonnegative(), sha256: z.string().regex(/^[0-9a-f]{64}$/) });

const Manifest = z.object({
  format: z.literal(1),
  variant: z.enum(['cpu', 'gpu']),
  /** The version of tfjs-node (cpu) or tfjs-node-gpu (gpu). */
  tfjsNode: z.string(),
  tensorflow: z.object({ package: z.string(), version: z.string(), wheel: z.string(), wheelSha256: z.string() }),
  napiVersion: z.number().int(),
  /** The CUDA wheels unpacked beside the libraries, by package name (none in a CPU build). */
  cudaWheels: z.record(z.string(), z.object({ version: z.string(), wheel: z.string(), sha256: z.string() })).default({}),
  /** The tools it was built with (for `backend status`; the binding is N-API, so any Node >= the N-API version loads it). */
  builtWith: z.object({ node: z.string(), nodedir: z.string(), compiler: z.string(), glibc: z.string() }),
  builtAt: z.string(),
  /** Seconds the install took, by phase. */
  seconds: z.record(z.string(), z.number()),
  /** Resolved versions of tfjs-node's JS dependencies other than tfjs itself (kept in the build's node_modules). */
  runtimeDeps: z.record(z.string(), z.string()),
  /** The binding and the shared libraries (CUDA's too), by path relative to the build folder. */
  files: z.record(z.string(), FileEntry),
});
export type NativeManifest = z.infer<typeof Manifest>;

/** The manifest file of a build. */
export const MANIFEST_FILE = 'manifest.json';

/** What a build folder holds: a usable build, or why not. */
export type NativeBuildState =
  | { state: 'installed'; dir: string; manifest: NativeManifest }
  | { state: 'missing'; dir: string }
  | { state: 'broken'; dir: string; problem: string };

/** The install command of a variant, for messages. */
export function installCommand(v: NativeVariant, force = false): string {
  const flags = `${v.variant === 'gpu' ? ' --gpu' : ''}${force ? ' --force' : ''}`;
  return `\`starpo backend install${flags}\`${v.variant === 'cpu' && !force ? ' (npm run backend:install)' : ''}`;
}

/**
 * Checks the build folder of variant `v` without loading anything: the manifest parses, its pins equal the
 * variant's, and every file it lists exists with its recorded size (sizes, not hashes, so a check takes milliseconds).
 */
export function inspectNativeBuild(v: NativeVariant = NATIVE_CPU, dir: string = nativeBuildDir(v)): NativeBuildState {
  const file = path.join(dir, MANIFEST_FILE);
  if (!fs.existsSync(file)) return { state: 'missing', dir };
  let manifest: NativeManifest;
  try {
    manifest = Manifest.parse(JSON.parse(fs.readFileSync(file, 'utf8')));
  } catch (err) {
    return { state: 'broken', dir, problem: `${file} is not a valid manifest: ${(err as Error).message.split('\n')[0]}` };
  }
  const pinned = pinsOf(v);
  const found = {
    variant: manifest.variant,
    tfjsNode: manifest.tfjsNode,
    wheel: manifest.tensorflow.wheel,
    napiVersion: manifest.napiVersion,
    cudaWheels: Object.values(manifest.cudaWheels).map((w) => w.wheel),
  };
  if (JSON.stringify(pinned) !== JSON.stringify(found)) {
    return { state: 'broken', dir, problem: `${file} was built from ${JSON.stringify(found)}, not the pinned ${JSON.stringify(pinned)}` };
  }
  for (const [rel, entry] of Object.entries(manifest.files)) {
    const size = fs.statSync(path.join(dir, rel), { throwIfNoEntry: false })?.size;
    if (size !== entry.bytes)
      return {
        state: 'broken',
        dir,
        problem: `${path.join(dir, rel)} is ${size === undefined ? 'missing' : `${size} bytes`}, the manifest says ${entry.bytes}`,
      };
  }
  return { state: 'installed', dir, manifest };
}

/** Thrown when the native backend is requested but cannot be used; the message says what to run. */
export class NativeBackendError extends Error {
  override name = 'NativeBackendError';
}

/**
 * The installed build of variant `v` in `dir` (checked as inspectNativeBuild does).
 * @throws NativeBackendError saying how to install it (missing) or reinstall it (broken)
 */
export function requireInstalled(
  v: NativeVariant = NATIVE_CPU,
  dir: string = nativeBuildDir(v),
): { dir: string; manifest: NativeManifest } {
  const build = inspectNativeBuild(v, dir);
  const what = `the native TensorFlow ${v.variant.toUpperCase()} backend (${v.backend})`;
  if (build.state === 'missing')
    throw new NativeBackendError(`${what} is not installed (no build in ${build.dir}); install it with ${installCommand(v)}`);
  if (build.state === 'broken')
    throw new NativeBackendError(`${what} is unusable: ${build.problem}; reinstall it with ${installCommand(v, true)}`);
  return build;
}
