/**
 * The native TensorFlow build in the cache outside the repo (DESIGN.md, "Workers and compute"): what is
 * pinned, where it lives, and its manifest. `starpo backend install` writes it; backend loading reads it.
 * The folder name carries every pin, so bumping one makes a new folder and old clones keep theirs.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { resolveCacheDir } from '../../infra/paths';

/** What the CPU build is made of. The wheel file is pinned (not only its version) so the build is reproducible. */
export const NATIVE_CPU = {
  variant: 'cpu',
  tfjsNode: { name: '@tensorflow/tfjs-node', version: '4.22.0' },
  wheel: {
    name: 'tensorflow-cpu',
    version: '2.21.0',
    /** The C library inside is the same for every Python tag; this one is asked for explicitly so the host's Python does not matter. */
    pythonVersion: '311',
    platform: 'manylinux_2_27_x86_64',
    file: 'tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl',
    sha256: '2b847d217b02ee7731ed91431daf3250daa0196c3c94614d23be27232e6e5b6c',
  },
  /** The wheel's manylinux tag: the oldest glibc its libraries run on. */
  minGlibc: '2.27',
  /** The N-API version built for; tfjs-node's loader looks in `lib/napi-v<this>`. */
  napiVersion: 8,
} as const;

/** The shared libraries the binding links, in `deps/lib` of a build. */
export const NATIVE_LIBRARIES = ['libtensorflow_cc.so.2', 'libtensorflow_framework.so.2'] as const;

/** The binding, relative to a build folder (where tfjs-node's own loader finds it). */
export const BINDING_FILE = `lib/napi-v${NATIVE_CPU.napiVersion}/tfjs_binding.node`;

/** Name of a build folder: every pin in it. */
export function nativeBuildName(): string {
  return `tfjs-node-${NATIVE_CPU.tfjsNode.version}-${NATIVE_CPU.wheel.name}-${NATIVE_CPU.wheel.version}-napi${NATIVE_CPU.napiVersion}`;
}

/** The folder of the CPU build: `<cache>/native/<nativeBuildName()>`. Absolute path. */
export function nativeBuildDir(cacheDir: string = resolveCacheDir()): string {
  return path.join(cacheDir, 'native', nativeBuildName());
}

const FileEntry = z.object({ bytes: z.number().int().nonnegative(), sha256: z.string().regex(/^[0-9a-f]{64}$/) });

const Manifest = z.object({
  format: z.literal(1),
  variant: z.literal('cpu'),
  tfjsNode: z.string(),
  tensorflow: z.object({ package: z.string(), version: z.string(), wheel: z.string(), wheelSha256: z.string() }),
  napiVersion: z.number().int(),
  /** The tools it was built with (for `backend status`; the binding is N-API, so any Node >= the N-API version loads it). */
  builtWith: z.object({ node: z.string(), nodedir: z.string(), compiler: z.string(), glibc: z.string() }),
  builtAt: z.string(),
  /** Seconds the install took, by phase. */
  seconds: z.record(z.string(), z.number()),
  /** Resolved versions of tfjs-node's JS dependencies other than tfjs itself (kept in the build's node_modules). */
  runtimeDeps: z.record(z.string(), z.string()),
  /** The binding and the shared libraries, by path relative to the build folder. */
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

/**
 * Checks the build folder without loading anything: the manifest parses, its pins equal NATIVE_CPU, and
 * every file it lists exists with its recorded size (sizes, not hashes, so a check takes milliseconds).
 */
export function inspectNativeBuild(dir: string = nativeBuildDir()): NativeBuildState {
  const file = path.join(dir, MANIFEST_FILE);
  if (!fs.existsSync(file)) return { state: 'missing', dir };
  let manifest: NativeManifest;
  try {
    manifest = Manifest.parse(JSON.parse(fs.readFileSync(file, 'utf8')));
  } catch (err) {
    return { state: 'broken', dir, problem: `${file} is not a valid manifest: ${(err as Error).message.split('\n')[0]}` };
  }
  const pinned = { tfjsNode: NATIVE_CPU.tfjsNode.version, wheel: NATIVE_CPU.wheel.file, napiVersion: NATIVE_CPU.napiVersion };
  const found = { tfjsNode: manifest.tfjsNode, wheel: manifest.tensorflow.wheel, napiVersion: manifest.napiVersion };
  if (JSON.stringify(pinned) !== JSON.stringify(found)) {
    return { state: 'broken', dir, problem: `${file} was built from ${JSON.stringify(found)}, not the pinned ${JSON.stringify(pinned)}` };
  }
  for (const [rel, entry] of Object.entries(manifest.files)) {
    const size = fs.statSync(path.join(dir, rel), { throwIfNoEntry: false })?.size;
    if (size !== entry.bytes) return { state: 'broken', dir, problem: `${path.join(dir, rel)} is ${size === undefined ? 'missing' : `${size} bytes`}, the manifest says ${entry.bytes}` };
  }
  return { state: 'installed', dir, manifest };
}

/** Thrown when the native backend is requested but cannot be used; the message says what to run. */
export class NativeBackendError extends Error {
  override name = 'NativeBackendError';
}

/**
 * The installed build in `dir` (checked as inspectNativeBuild does).
 * @throws NativeBackendError saying how to install it (missing) or reinstall it (broken)
 */
export function requireInstalled(dir: string = nativeBuildDir()): { dir: string; manifest: NativeManifest } {
  const build = inspectNativeBuild(dir);
  if (build.state === 'missing') {
    throw new NativeBackendError(`the native TensorFlow backend is not installed (no build in ${build.dir}); install it with \`starpo backend install\` (npm run backend:install)`);
  }
  if (build.state === 'broken') {
    throw new NativeBackendError(`the native TensorFlow build is unusable: ${build.problem}; reinstall it with \`starpo backend install --force\``);
  }
  return build;
}
