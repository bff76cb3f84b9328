/**
 * What a host needs to build the native TensorFlow backend (`starpo backend install`), found out without
 * installing anything, and the message for each thing that is missing: what it is and how to get it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runCommand } from '../../infra/command';
import { NATIVE_CPU } from '../model/native_build';

/** The facts about this host that the install depends on. */
export interface HostFacts {
  platform: string;
  arch: string;
  /** glibc version running this process, null on a non-glibc libc (musl). */
  glibc: string | null;
  /** The Python whose `-m pip` works (python3, else python), or null. */
  python: string | null;
  /** First line of `$CXX --version` (default g++), or null when it does not run. */
  compiler: string | null;
  /** `make` runs (node-gyp drives the build with it). */
  make: boolean;
  /** `npm` runs (it fetches tfjs-node). */
  npm: boolean;
  /** Node's install prefix: its headers are `<nodedir>/include/node`. */
  nodedir: string;
  /** `<nodedir>/include/node/node_api.h` exists. */
  nodeHeaders: boolean;
  /** node-gyp's entry script (the one npm bundles), or null. */
  nodeGyp: string | null;
}

/** The C++ compiler node-gyp's make files use. */
export const compilerCommand = (): string => process.env.CXX || 'g++';

/** node-gyp as bundled with the npm that ships with this Node (`<prefix>/lib/node_modules/npm/...`). */
function findNodeGyp(nodedir: string): string | null {
  const candidates = [
    process.env.npm_config_node_gyp, // set when run through an npm script
    path.join(nodedir, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ];
  return candidates.find((c): c is string => !!c && fs.existsSync(c)) ?? null;
}

/** The first line a command prints, or null when it fails. */
async function firstLine(cmd: string, args: string[]): Promise<string | null> {
  const res = await runCommand(cmd, args, { timeoutSeconds: 60 });
  return res.code === 0 ? (res.tail.split('\n')[0] ?? '').trim() : null;
}

/** Probes this host (runs `--version` of python/pip, the compiler, make and npm). */
export async function probeHost(): Promise<HostFacts> {
  const nodedir = path.resolve(path.dirname(process.execPath), '..');
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  let python: string | null = null;
  for (const candidate of ['python3', 'python']) {
    if (await firstLine(candidate, ['-m', 'pip', '--version'])) {
      python = candidate;
      break;
    }
  }
  const [compiler, make, npm] = await Promise.all([
    firstLine(compilerCommand(), ['--version']),
    firstLine('make', ['--version']),
    firstLine('npm', ['--version']),
  ]);
  return {
    platform: process.platform,
    arch: process.arch,
    glibc: header?.glibcVersionRuntime ?? null,
    python,
    compiler,
    make: make !== null,
    npm: npm !== null,
    nodedir,
    nodeHeaders: fs.existsSync(path.join(nodedir, 'include', 'node', 'node_api.h')),
    nodeGyp: findNodeGyp(nodedir),
  };
}

/** true when version `a` (dotted numbers) is at least `b`. */
export function versionAtLeast(a: string, b: string): boolean {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? 0;
    const y = pb[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
}

/**
 * One message per missing prerequisite, naming it and how to get it (Debian/Ubuntu package names); empty
 * when the host can build. The platform check comes alone: nothing else matters on another platform.
 */
export function missingPrerequisites(f: HostFacts): string[] {
  if (f.platform !== 'linux' || f.arch !== 'x64') {
    return [
      `the native TensorFlow backend is built for linux x64 only (PyPI's ${NATIVE_CPU.wheel.name} ${NATIVE_CPU.wheel.platform} wheel); this host is ${f.platform} ${f.arch}: use the wasm backend`,
    ];
  }
  const missing: string[] = [];
  if (f.glibc === null)
    missing.push(
      `glibc: this Node does not run on glibc (musl?); the TensorFlow libraries need glibc >= ${NATIVE_CPU.minGlibc} (use a glibc-based distribution or image, e.g. Debian or Ubuntu)`,
    );
  else if (!versionAtLeast(f.glibc, NATIVE_CPU.minGlibc))
    missing.push(
      `glibc ${f.glibc} is too old: the TensorFlow libraries need glibc >= ${NATIVE_CPU.minGlibc} (Debian 10+, Ubuntu 18.04+, RHEL 8+)`,
    );
  if (!f.python)
    missing.push(
      'pip: neither `python3 -m pip` nor `python -m pip` runs; it downloads the TensorFlow wheel from PyPI (Debian/Ubuntu: apt-get install python3-pip)',
    );
  if (!f.compiler)
    missing.push(
      `a C++ compiler: \`${compilerCommand()} --version\` does not run (Debian/Ubuntu: apt-get install g++; or set CXX to your compiler)`,
    );
  if (!f.make) missing.push('make: `make --version` does not run; node-gyp builds with it (Debian/Ubuntu: apt-get install make)');
  if (!f.npm) missing.push('npm: `npm --version` does not run; it fetches @tensorflow/tfjs-node (it ships with Node)');
  if (!f.nodeHeaders) {
    missing.push(
      `Node's headers: ${path.join(f.nodedir, 'include', 'node', 'node_api.h')} is missing; they come with the official Node tarballs, nvm and NodeSource packages (Debian/Ubuntu's own nodejs package: apt-get install libnode-dev)`,
    );
  }
  if (!f.nodeGyp)
    missing.push(
      `node-gyp: npm's bundled copy is not at ${path.join(f.nodedir, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp')}; run the install through npm (npm run backend:install), which sets npm_config_node_gyp`,
    );
  return missing;
}
