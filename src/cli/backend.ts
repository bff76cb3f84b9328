/**
 * `starpo backend install|status` (DESIGN.md, "Workers and compute"). Wired into the `starpo` command by main.ts;
 * the install and status modules load lazily. Progress goes to stderr, results to stdout.
 */
import type { Command } from 'commander';

/** Adds `backend install` and `backend status` to `program`. */
export function registerBackendCommands(program: Command): void {
  const backend = program.command('backend').description('tfjs backends: build the native TensorFlow backend into the cache, show what this host can run');
  const log = (line: string) => process.stderr.write(`[backend] ${line}\n`);
  backend
    .command('install')
    .description("build the native TensorFlow CPU backend (tfjs-node's binding against PyPI's tensorflow-cpu wheel) into ~/.cache/starpo/native; a second run is a cache hit")
    .option('--force', 'rebuild even when a valid build is there (the old one is replaced once the new one passed its smoke test)')
    .action(async (o: { force?: boolean }) => {
      const { installNativeBackend } = require('./backend_install') as typeof import('./backend_install');
      const { folderBytes, mb } = require('../../infra/install_progress') as typeof import('../../infra/install_progress');
      const t0 = Date.now();
      const out = await installNativeBackend({ force: o.force, log });
      const seconds = ((Date.now() - t0) / 1000).toFixed(1);
      const m = out.manifest;
      process.stdout.write(
        `${out.cached ? 'already installed' : 'installed'}: ${out.dir}\n` +
          `  @tensorflow/tfjs-node ${m.tfjsNode} on ${m.tensorflow.package} ${m.tensorflow.version}, ${mb(folderBytes(out.dir))} MB, ${seconds} s\n` +
          '  use it with STARPO_BACKEND=tensorflow or --backend tensorflow (starpo train / starpo worker)\n',
      );
    });
  backend
    .command('status')
    .description('which backends this host can run, the native build (path, versions, size), and the backend of each worker role')
    .option('--json', 'print the status as JSON')
    .action(async (o: { json?: boolean }) => {
      const { backendStatus, formatBackendStatus } = require('./backend_status') as typeof import('./backend_status');
      const s = await backendStatus();
      process.stdout.write(o.json ? `${JSON.stringify(s, null, 2)}\n` : `${formatBackendStatus(s).join('\n')}\n`);
    });
}
