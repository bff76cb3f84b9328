/**
 * A checkpoint in the store: its files written as objects with the manifest LAST and read back with every
 * sha256 verified; the latest.json / initial.json pointers; the search for the newest usable checkpoint.
 * What a policy checkpoint holds and which optimizer states the store keeps: policy_checkpoint.ts.
 * docs/durability.md tells the story.
 */

import {
  type CheckpointManifest,
  checkpointManifestSchema,
  type LatestPointer,
  latestPointerSchema,
  type ObjectRef,
  type ObjectSink,
  type StreamedObject,
  validateRunId,
} from '../contract';
import { CorruptObjectError, isUnusable, ObjectNotFoundError } from './errors';
import { checkpointPrefix, checkpointsPrefix, initialKey, latestKey, MANIFEST_NAME, parseStep } from './keys';
import type { ObjectStore } from './object_store';

/**
 * Name of the second manifest of a checkpoint: it commits the optimizer state (optimizer.safetensors and, for
 * gae runs, critic_optimizer.safetensors), written before manifest.json so a checkpoint that exists has it.
 * A manifest of its own, so the store can drop an old optimizer state and keep the step's weights.
 */
export const OPTIMIZER_MANIFEST_NAME = 'optimizer_manifest.json';
export const OPTIMIZER_FILES = ['optimizer.safetensors', 'critic_optimizer.safetensors'];
/**
 * A checkpoint's weights, policy first: the model's full weights, or a LoRA run's adapters and their config (PEFT's
 * file names, model/hf/peft.ts), then the critic's. A step without its policy's file had its weights dropped by retention.
 */
export const WEIGHT_FILES = ['model.safetensors', 'adapter_model.safetensors', 'adapter_config.json', 'critic.safetensors'];

const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** A checkpoint read back and verified: its manifest reference, manifest and file contents by name. */
export interface LoadedCheckpoint {
  ref: ObjectRef;
  manifest: CheckpointManifest;
  /** Every file readCheckpoint was not given a sink for. */
  files: Record<string, Uint8Array>;
}

/**
 * Where readCheckpoint streams a file (name, size in bytes) instead of returning its bytes; undefined to have the
 * bytes. Called once per read attempt: the sink of the last call holds the file once readCheckpoint returns.
 */
export type SinkFor = (name: string, bytes: number) => ObjectSink | undefined;

/** A sink for every safetensors file that keeps nothing: its bytes are read and verified on the stream, then dropped. */
export const verifyOnlySafetensors: SinkFor = (name) => (name.endsWith('.safetensors') ? { write: () => undefined } : undefined);

/** Runs `fn` over `items` with at most `limit` in flight. */
async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * Writes every file under `prefix` (e.g. checkpointPrefix(runId, step)), THEN `<prefix><manifestName>`
 * with each object's key, bytes and sha256, `meta` and `createdAt`. A file given as a StreamedObject (weights,
 * optimizer state) is uploaded in parts as it is produced, its sha256 computed on the stream. Idempotent: when a manifest with the
 * same objects and meta already exists (a retried activity), it is kept and its reference returned.
 * @throws Error when prefix does not end with `/` or a file name is not [A-Za-z0-9._-] (or is a manifest's).
 */
export async function writeCheckpoint(
  store: ObjectStore,
  prefix: string,
  files: Record<string, Uint8Array | StreamedObject>,
  meta: Record<string, unknown>,
  manifestName = MANIFEST_NAME,
): Promise<ObjectRef> {
  if (!prefix.endsWith('/')) throw new Error(`checkpoint prefix ${JSON.stringify(prefix)} must end with "/"`);
  const names = Object.keys(files).sort();
  for (const name of names) {
    if (!FILE_NAME.test(name) || name === MANIFEST_NAME || name === OPTIMIZER_MANIFEST_NAME) {
      throw new Error(
        `checkpoint file name ${JSON.stringify(name)} is invalid; allowed: 1-128 characters of A-Z a-z 0-9 . _ - (not ${MANIFEST_NAME})`,
      );
    }
  }
  const refs = await mapLimit(names, 4, (name) => {
    const file = files[name] as Uint8Array | StreamedObject;
    return file instanceof Uint8Array ? store.put(`${prefix}${name}`, file) : store.putStreamed(`${prefix}${name}`, file);
  });
  const objects = refs.map((r, i) => ({ name: names[i] as string, key: r.key, bytes: r.bytes, sha256: r.sha256 }));
  const manifestKey = `${prefix}${manifestName}`;
  const existing = await readManifestIfSame(store, manifestKey, objects, meta);
  if (existing) return existing;
  const manifest: CheckpointManifest = { format: 'starpo-checkpoint/1', prefix, objects, meta, createdAt: new Date().toISOString() };
  return store.putJson(manifestKey, manifest);
}

/** The reference of an existing manifest at `key` that lists exactly `objects` and `meta`, else null. */
async function readManifestIfSame(
  store: ObjectStore,
  key: string,
  objects: CheckpointManifest['objects'],
  meta: Record<string, unknown>,
): Promise<ObjectRef | null> {
  if (!(await store.exists(key))) return null;
  const ref = await store.refOf(key);
  const parsed = checkpointManifestSchema.safeParse(await store.getJson(ref).catch(() => null));
  if (!parsed.success) return null;
  const same = JSON.stringify(parsed.data.objects) === JSON.stringify(objects) && JSON.stringify(parsed.data.meta) === JSON.stringify(meta);
  return same ? ref : null;
}

/**
 * Reads a checkpoint by manifest reference (manifest verified too) or manifest key (manifest unverified),
 * then reads and verifies every object it lists: into the sink `sinkFor` gives it (verified on the stream, no
 * buffer of the whole object), else as bytes.
 * @throws CorruptObjectError (bad bytes or malformed manifest, names the key), ObjectNotFoundError (missing object),
 *   a sink's error when an object verifies but its sink refuses it
 */
export async function readCheckpoint(store: ObjectStore, manifest: ObjectRef | string, sinkFor?: SinkFor): Promise<LoadedCheckpoint> {
  const ref = typeof manifest === 'string' ? await store.refOf(manifest) : manifest;
  const raw = await store.getJson(ref);
  const parsed = checkpointManifestSchema.safeParse(raw);
  if (!parsed.success)
    throw new CorruptObjectError(
      ref.key,
      'a starpo-checkpoint/1 manifest',
      `invalid manifest (${parsed.error.issues[0]?.message ?? 'schema mismatch'})`,
      'invalid manifest',
    );
  const files: Record<string, Uint8Array> = {};
  await mapLimit(parsed.data.objects, 4, async (o) => {
    const objectRef = { bucket: ref.bucket, key: o.key, sha256: o.sha256, bytes: o.bytes };
    let unused = sinkFor?.(o.name, o.bytes);
    if (!unused) files[o.name] = await store.get(objectRef);
    else
      await store.readInto(objectRef, () => {
        const sink = unused ?? (sinkFor?.(o.name, o.bytes) as ObjectSink); // a retried read starts afresh
        unused = undefined;
        return sink;
      });
  });
  return { ref, manifest: parsed.data, files };
}

/**
 * One file of a checkpoint, verified against its manifest (read by key, like readCompleteBefore does).
 * @returns the bytes, or null when the manifest lists no file of that name (e.g. an older checkpoint)
 * @throws ObjectNotFoundError when the manifest or the object is missing, CorruptObjectError when either is damaged
 */
export async function readCheckpointFile(store: ObjectStore, manifestKey: string, name: string): Promise<Uint8Array | null> {
  const raw = await store.getJson(manifestKey);
  const parsed = checkpointManifestSchema.safeParse(raw);
  if (!parsed.success)
    throw new CorruptObjectError(
      manifestKey,
      'a starpo-checkpoint/1 manifest',
      `invalid manifest (${parsed.error.issues[0]?.message ?? 'schema mismatch'})`,
      'invalid manifest',
    );
  const entry = parsed.data.objects.find((o) => o.name === name);
  return entry ? store.get({ bucket: store.bucket, key: entry.key, sha256: entry.sha256, bytes: entry.bytes }) : null;
}

/** Points `runs/<runId>/latest.json` at `manifestRef` for `step`. Same inputs write the same bytes. */
export async function writeLatest(store: ObjectStore, runId: string, manifestRef: ObjectRef, step: number): Promise<ObjectRef> {
  return store.putJson(latestKey(runId), pointer(runId, manifestRef, step));
}

/**
 * Points `runs/<runId>/initial.json` at the run's step-0 checkpoint (the warm-up, which lives under
 * `warmup/`, outside the run's checkpoints/): the last resort of readCompleteBefore. Idempotent.
 */
export async function writeInitial(store: ObjectStore, runId: string, manifestRef: ObjectRef): Promise<ObjectRef> {
  return store.putJson(initialKey(runId), pointer(runId, manifestRef, 0));
}

/** The contents of a pointer object (latest.json, initial.json). */
function pointer(runId: string, manifest: ObjectRef, step: number): LatestPointer {
  return { runId: validateRunId(runId), step, manifest };
}

/**
 * Reads `runs/<runId>/latest.json`; null when it does not exist.
 * @throws CorruptObjectError when it exists but is not a valid pointer.
 */
export async function readLatest(store: ObjectStore, runId: string): Promise<LatestPointer | null> {
  return readPointer(store, latestKey(runId));
}

/**
 * Reads `runs/<runId>/initial.json` (the run's step-0 checkpoint); null when it does not exist.
 * @throws CorruptObjectError when it exists but is not a valid pointer.
 */
export async function readInitial(store: ObjectStore, runId: string): Promise<LatestPointer | null> {
  return readPointer(store, initialKey(runId));
}

/** Reads a pointer object (latest.json, initial.json); null when missing. @throws CorruptObjectError for a bad shape. */
async function readPointer(store: ObjectStore, key: string): Promise<LatestPointer | null> {
  let raw: unknown;
  try {
    raw = await store.getJson(key);
  } catch (err) {
    if (err instanceof ObjectNotFoundError) return null;
    throw err;
  }
  const parsed = latestPointerSchema.safeParse(raw);
  if (!parsed.success)
    throw new CorruptObjectError(
      key,
      'a pointer {runId, step, manifest}',
      `invalid JSON shape (${parsed.error.issues[0]?.message})`,
      'invalid pointer',
    );
  return parsed.data;
}

/** A verified checkpoint with the pipeline step it holds. */
export type CompleteCheckpoint = LoadedCheckpoint & { step: number };

/**
 * The newest complete checkpoint of a run, verified: the one latest.json points to, or, when that pointer
 * or its checkpoint is missing or corrupt, readCompleteBefore that step. `starpo resume` uses it.
 * Logs each reason for falling back through `log` (naming the object and why). Null when none is usable.
 * @throws errors other than corruption/missing objects (e.g. the S3 server is unreachable).
 */
export async function readLatestComplete(
  store: ObjectStore,
  runId: string,
  log: (line: string) => void = () => undefined,
): Promise<CompleteCheckpoint | null> {
  let latest: LatestPointer | null = null;
  try {
    latest = await readLatest(store, runId);
    if (!latest) log(`run ${runId}: no ${latestKey(runId)}; looking for complete checkpoints`);
  } catch (err) {
    if (!isUnusable(err)) throw err;
    log(`run ${runId}: ${err.message}; looking for complete checkpoints`);
  }
  if (!latest) return readCompleteBefore(store, runId, Number.POSITIVE_INFINITY, log);
  try {
    return { ...(await readCheckpoint(store, latest.manifest)), step: latest.step };
  } catch (err) {
    if (!isUnusable(err)) throw err;
    log(
      `run ${runId}: latest checkpoint (step ${latest.step}, ${latest.manifest.key}) is not usable: ${err.message}; falling back to an earlier one`,
    );
    return readCompleteBefore(store, runId, latest.step, log);
  }
}

/**
 * The newest checkpoint of a run older than step `below` whose manifest and objects verify: the
 * manifests under `runs/<runId>/checkpoints/`, newest step first, then the step-0 checkpoint of
 * initial.json. With `withOptimizer` (a checkpoint to train on), only steps that kept their optimizer
 * state count, and it must verify too. Logs every checkpoint it skips and why, and the one it uses.
 * Null when none is usable.
 * @throws errors other than corruption/missing objects (e.g. the S3 server is unreachable).
 */
export async function readCompleteBefore(
  store: ObjectStore,
  runId: string,
  below: number,
  log: (line: string) => void = () => undefined,
  withOptimizer = false,
): Promise<CompleteCheckpoint | null> {
  const listed = (await store.list(checkpointsPrefix(runId))).map((o) => o.key);
  const optimizerSteps = new Set(stepsListing(listed, OPTIMIZER_MANIFEST_NAME));
  const candidates: Array<{ step: number; manifest: ObjectRef | string }> = weightSteps(listed)
    .filter((step) => step < below && (!withOptimizer || optimizerSteps.has(step)))
    .map((step) => ({ step, manifest: `${checkpointPrefix(runId, step)}${MANIFEST_NAME}` }))
    .sort((a, b) => b.step - a.step);
  if (below > 0) {
    try {
      const initial = await readPointer(store, initialKey(runId));
      if (initial) candidates.push({ step: 0, manifest: initial.manifest });
    } catch (err) {
      if (!isUnusable(err)) throw err;
      log(`run ${runId}: ${err.message}`);
    }
  }
  for (const c of candidates) {
    try {
      const loaded = await readCheckpoint(store, c.manifest);
      if (withOptimizer && c.step > 0) await readOptimizerFiles(store, loaded.ref.key);
      log(`run ${runId}: using checkpoint step ${c.step} (${loaded.ref.key})`);
      return { ...loaded, step: c.step };
    } catch (err) {
      if (!isUnusable(err)) throw err;
      log(`run ${runId}: checkpoint step ${c.step} is not usable: ${err.message}`);
    }
  }
  log(`run ${runId}: no complete checkpoint${Number.isFinite(below) ? ` before step ${below}` : ''}`);
  return null;
}

/** The steps of `keys` (listed under a run's checkpoints/) holding an object named `name`, ascending. */
export function stepsListing(keys: readonly string[], name: string): number[] {
  return keys
    .filter((k) => k.endsWith(`/${name}`))
    .map(parseStep)
    .filter((s): s is number => s !== null)
    .sort((a, b) => a - b);
}

/** The steps of `keys` whose checkpoint is written (manifest.json) and still holds its weights. */
function weightSteps(keys: readonly string[]): number[] {
  const withModel = new Set([...stepsListing(keys, 'model.safetensors'), ...stepsListing(keys, 'adapter_model.safetensors')]);
  return stepsListing(keys, MANIFEST_NAME).filter((s) => withModel.has(s));
}

/**
 * The steps of a run whose weights `eval` and `export` can read, ascending: 0 when initial.json points at
 * the step-0 policy, then every written checkpoint that retention left its weights (policy_checkpoint.ts).
 */
export async function checkpointSteps(store: ObjectStore, runId: string): Promise<number[]> {
  const steps = weightSteps((await store.list(checkpointsPrefix(runId))).map((o) => o.key));
  return (await store.exists(initialKey(runId))) ? [0, ...steps.filter((s) => s > 0)] : steps;
}

/**
 * The optimizer files of the checkpoint whose manifest.json is at `manifestKey`, verified (streamed into the
 * sinks `sinkFor` gives, as readCheckpoint does).
 * @throws ObjectNotFoundError when it kept no optimizer state, CorruptObjectError when it is damaged
 */
export async function readOptimizerFiles(store: ObjectStore, manifestKey: string, sinkFor?: SinkFor): Promise<Record<string, Uint8Array>> {
  const key = `${manifestKey.slice(0, manifestKey.length - MANIFEST_NAME.length)}${OPTIMIZER_MANIFEST_NAME}`;
  return (await readCheckpoint(store, key, sinkFor)).files;
}
