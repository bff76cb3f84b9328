/**
 * What bench/real_size.ts reads off the processes and the store: a worker's peak RSS (Linux VmHWM, reset through
 * clear_refs), the multipart uploads open under a checkpoint, and a checkpoint's hashes with its objects verified
 * on the stream (a bench process never holds a real-size checkpoint).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { ObjectRef } from '../../src/contract';
import { readCheckpoint, readOptimizerFiles, verifyOnlySafetensors } from '../../src/storage/checkpoint';
import type { ObjectStore } from '../../src/storage/object_store';
import { trainerStateOf } from '../../src/storage/policy_checkpoint';

/** Peak RSS in bytes of process `pid` since it started or since resetPeakRss (0 when it is gone). */
export function peakRss(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Starts a new peak RSS for process `pid` (Linux: "5" to its clear_refs); a no-op where that is refused. */
export function resetPeakRss(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    /* figures stay cumulative */
  }
}

/** The names among `names` under `prefix` with a multipart upload open now. */
export async function openUploads(store: ObjectStore, prefix: string, names: readonly string[]): Promise<string[]> {
  const open: string[] = [];
  for (const name of names) if (await store.client.findUploadId(store.bucket, `${prefix}${name}`)) open.push(name);
  return open;
}

/**
 * The sha256 of a checkpoint's model.safetensors and optimizer.safetensors as its manifests record them, and its
 * trainer state without wall-clock metrics, every object read and verified on the stream.
 * @throws CorruptObjectError when an object does not verify
 */
export async function checkpointHashes(store: ObjectStore, manifest: ObjectRef): Promise<Record<string, string>> {
  const { files, manifest: m } = await readCheckpoint(store, manifest, verifyOnlySafetensors);
  await readOptimizerFiles(store, manifest.key, verifyOnlySafetensors);
  const optimizerKey = manifest.key.replace(/manifest\.json$/, 'optimizer_manifest.json');
  const optimizer = (await store.getJson(optimizerKey)) as { objects: Array<{ name: string; sha256: string }> };
  const state = trainerStateOf(files);
  state.metrics = Object.fromEntries(Object.entries(state.metrics).filter(([k]) => !k.startsWith('time/')));
  const sha = (objects: Array<{ name: string; sha256: string }>, name: string) => objects.find((o) => o.name === name)?.sha256 ?? 'missing';
  return {
    model: sha(m.objects, 'model.safetensors'),
    optimizer: sha(optimizer.objects, 'optimizer.safetensors'),
    trainerState: JSON.stringify(state),
  };
}
