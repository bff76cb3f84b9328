/**
 * `starpo export <runId> [--step N] --to DIR`: an HF-format model folder (model/hf/folder.ts) from a
 * checkpoint of a run, read and sha256-verified from the object store (default: the newest complete
 * checkpoint, falling back as `resume` does). The files go to a temp folder next to DIR that is then
 * renamed to DIR, so DIR is either complete or absent. `pretrain: DIR` loads the folder again.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { hfFolderFiles } from '../model/hf/folder';
import type { ObjectStore } from '../storage/object_store';
import { writeFolderAtomically } from '../util/atomic_folder';
import { BadInputError } from './exit_codes';
import { loadRunSpec } from './known_run';
import { pickCheckpoint } from './pick_checkpoint';

/** What was exported: the folder, the checkpoint's step and manifest key, and each file's size in bytes. */
export interface ExportResult {
  dir: string;
  step: number;
  manifestKey: string;
  files: Array<{ name: string; bytes: number }>;
}

/** @throws BadInputError when `dir` exists and is not an empty folder */
function checkTarget(dir: string): void {
  if (!existsSync(dir)) return;
  if (!statSync(dir).isDirectory()) throw new BadInputError(`--to ${dir}: exists and is not a folder; allowed: a new or empty folder`);
  if (readdirSync(dir).length > 0) throw new BadInputError(`--to ${dir}: the folder is not empty; allowed: a new or empty folder`);
}

/**
 * Exports a checkpoint of `runId` as an HF model folder at `to`.
 * @param step the checkpoint's step (0 = the run's step-0 policy); default the newest complete one
 * @throws InvalidKeyPartError / BadInputError (exit 2) for a bad run id, an unknown run, a missing step
 *   or a non-empty `to`; InfraUnavailableError (exit 3) when the S3 server does not answer;
 *   CorruptObjectError when the chosen checkpoint does not verify
 */
export async function exportCheckpoint(
  store: ObjectStore,
  runId: string,
  opts: { step?: number; to: string; log: (line: string) => void },
): Promise<ExportResult> {
  const dir = resolve(opts.to);
  checkTarget(dir);
  const spec = await loadRunSpec(store, runId);
  const checkpoint = await pickCheckpoint(store, runId, opts.step, opts.step === undefined ? 'export' : `--step ${opts.step}`, opts.log);
  const files = hfFolderFiles(checkpoint.files, spec.config.actor_infer.generating_args);
  checkTarget(dir); // again: it may have been filled meanwhile
  writeFolderAtomically(dir, files);
  return {
    dir,
    step: checkpoint.step,
    manifestKey: checkpoint.ref.key,
    files: Object.entries(files).map(([name, bytes]) => ({ name, bytes: bytes.length })),
  };
}
