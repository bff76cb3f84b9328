/**
 * Checkpoints as a set of objects plus `manifest.json` written LAST (every object's key, bytes, sha256),
 * and `latest.json` pointing at the newest complete manifest. A checkpoint exists only once its manifest
 * exists; readers verify sha256 (DESIGN.md, "Object store layout"; issue 2 item 9).
 */
import { z } from 'zod';
import { CorruptObjectError, ObjectNotFoundError } from './errors';
import { checkpointsPrefix, latestKey, MANIFEST_NAME, parseStep, validateRunId } from './keys';
import type { ObjectRef, ObjectStore } from './object_store';

const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

const refSchema = z.object({ bucket: z.string(), key: z.string(), sha256: z.string().regex(/^[0-9a-f]{64}$/), bytes: z.number().int().nonnegative() });
const manifestSchema = z.object({
  format: z.literal('starpo-checkpoint/1'),
  prefix: z.string(),
  objects: z.array(z.object({ name: z.string(), key: z.string(), bytes: z.number().int().nonnegative(), sha256: z.string().regex(/^[0-9a-f]{64}$/) })),
  meta: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
});
const latestSchema = z.object({ runId: z.string(), step: z.number().int().nonnegative(), manifest: refSchema });

/** Contents of a checkpoint's manifest.json. `bytes` are content lengths in bytes; `sha256` lower-case hex. */
export type CheckpointManifest = z.infer<typeof manifestSchema>;
/** Contents of `runs/<runId>/latest.json`. */
export type LatestPointer = z.infer<typeof latestSchema>;
/** A checkpoint read back and verified: its manifest reference, manifest and file contents by name. */
export interface LoadedCheckpoint {
  ref: ObjectRef;
  manifest: CheckpointManifest;
  files: Record<string, Uint8Array>;
}

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
 * Writes every file under `prefix` (e.g. checkpointPrefix(runId, step)), THEN `<prefix>manifest.json`
 * with each object's key, bytes and sha256, `meta` and `createdAt`. Idempotent: when a manifest with the
 * same objects and meta already exists (a retried activity), it is kept and its reference returned.
 * @throws Error when prefix does not end with `/` or a file name is not [A-Za-z0-9._-] (or is manifest.json).
 */
export async function writeCheckpoint(store: ObjectStore, prefix: string, files: Record<string, Uint8Array>, meta: Record<string, unknown>): Promise<ObjectRef> {
  if (!prefix.endsWith('/')) throw new Error(`checkpoint prefix ${JSON.stringify(prefix)} must end with "/"`);
  const names = Object.keys(files).sort();
  for (const name of names) {
    if (!FILE_NAME.test(name) || name === MANIFEST_NAME) {
      throw new Error(`checkpoint file name ${JSON.stringify(name)} is invalid; allowed: 1-128 characters of A-Z a-z 0-9 . _ - (not ${MANIFEST_NAME})`);
    }
  }
  const refs = await mapLimit(names, 4, (name) => store.put(`${prefix}${name}`, files[name] as Uint8Array));
  const objects = refs.map((r, i) => ({ name: names[i] as string, key: r.key, bytes: r.bytes, sha256: r.sha256 }));
  const manifestKey = `${prefix}${MANIFEST_NAME}`;
  const existing = await readManifestIfSame(store, manifestKey, objects, meta);
  if (existing) return existing;
  const manifest: CheckpointManifest = { format: 'starpo-checkpoint/1', prefix, objects, meta, createdAt: new Date().toISOString() };
  return store.putJson(manifestKey, manifest);
}

/** The reference of an existing manifest at `key` that lists exactly `objects` and `meta`, else null. */
async function readManifestIfSame(store: ObjectStore, key: string, objects: CheckpointManifest['objects'], meta: Record<string, unknown>): Promise<ObjectRef | null> {
  if (!(await store.exists(key))) return null;
  const ref = await store.refOf(key);
  const parsed = manifestSchema.safeParse(await store.getJson(ref).catch(() => null));
  if (!parsed.success) return null;
  const same = JSON.stringify(parsed.data.objects) === JSON.stringify(objects) && JSON.stringify(parsed.data.meta) === JSON.stringify(meta);
  return same ? ref : null;
}

/**
 * Reads a checkpoint by manifest reference (manifest verified too) or manifest key (manifest unverified),
 * then reads and verifies every object it lists.
 * @throws CorruptObjectError (bad bytes or malformed manifest, names the key), ObjectNotFoundError (missing object).
 */
export async function readCheckpoint(store: ObjectStore, manifest: ObjectRef | string): Promise<LoadedCheckpoint> {
  const ref = typeof manifest === 'string' ? await store.refOf(manifest) : manifest;
  const raw = await store.getJson(ref);
  const parsed = manifestSchema.safeParse(raw);
  if (!parsed.success) throw new CorruptObjectError(ref.key, 'a starpo-checkpoint/1 manifest', `invalid manifest (${parsed.error.issues[0]?.message ?? 'schema mismatch'})`);
  const files: Record<string, Uint8Array> = {};
  await mapLimit(parsed.data.objects, 4, async (o) => {
    files[o.name] = await store.get({ bucket: ref.bucket, key: o.key, sha256: o.sha256, bytes: o.bytes });
  });
  return { ref, manifest: parsed.data, files };
}

/** Points `runs/<runId>/latest.json` at `manifestRef` for `step`. Same inputs write the same bytes. */
export async function writeLatest(store: ObjectStore, runId: string, manifestRef: ObjectRef, step: number): Promise<ObjectRef> {
  const pointer: LatestPointer = { runId: validateRunId(runId), step, manifest: manifestRef };
  return store.putJson(latestKey(runId), pointer);
}

/**
 * Reads `runs/<runId>/latest.json`; null when it does not exist.
 * @throws CorruptObjectError when it exists but is not a valid pointer.
 */
export async function readLatest(store: ObjectStore, runId: string): Promise<LatestPointer | null> {
  const key = latestKey(runId);
  let raw: unknown;
  try {
    raw = await store.getJson(key);
  } catch (err) {
    if (err instanceof ObjectNotFoundError) return null;
    throw err;
  }
  const parsed = latestSchema.safeParse(raw);
  if (!parsed.success) throw new CorruptObjectError(key, 'a latest pointer {runId, step, manifest}', `invalid JSON shape (${parsed.error.issues[0]?.message})`);
  return parsed.data;
}

/** true for the errors that make a checkpoint unusable (as opposed to, say, a dead S3 server). */
function isUnusable(err: unknown): err is Error {
  return err instanceof CorruptObjectError || err instanceof ObjectNotFoundError;
}

/**
 * The newest complete checkpoint of a run, verified: the one latest.json points to, or, when that pointer
 * or its checkpoint is missing or corrupt, the newest earlier step under `runs/<runId>/checkpoints/` whose
 * manifest and objects verify. Logs each reason for falling back through `log`. Null when none is usable.
 * @throws errors other than corruption/missing objects (e.g. the S3 server is unreachable).
 */
export async function readLatestComplete(store: ObjectStore, runId: string, log: (line: string) => void = () => undefined): Promise<(LoadedCheckpoint & { step: number }) | null> {
  let ceiling = Number.POSITIVE_INFINITY;
  let latest: LatestPointer | null = null;
  try {
    latest = await readLatest(store, runId);
    if (!latest) log(`run ${runId}: no ${latestKey(runId)}; looking for complete checkpoints`);
  } catch (err) {
    if (!isUnusable(err)) throw err;
    log(`run ${runId}: ${err.message}; looking for complete checkpoints`);
  }
  if (latest) {
    try {
      return { ...(await readCheckpoint(store, latest.manifest)), step: latest.step };
    } catch (err) {
      if (!isUnusable(err)) throw err;
      log(`run ${runId}: latest checkpoint (step ${latest.step}, ${latest.manifest.key}) is not usable: ${err.message}; falling back to an earlier one`);
      ceiling = latest.step;
    }
  }
  const manifests = (await store.list(checkpointsPrefix(runId)))
    .filter((o) => o.key.endsWith(`/${MANIFEST_NAME}`))
    .map((o) => ({ key: o.key, step: parseStep(o.key) }))
    .filter((o): o is { key: string; step: number } => o.step !== null && o.step < ceiling)
    .sort((a, b) => b.step - a.step);
  for (const m of manifests) {
    try {
      const loaded = await readCheckpoint(store, m.key);
      log(`run ${runId}: using checkpoint step ${m.step} (${m.key})`);
      return { ...loaded, step: m.step };
    } catch (err) {
      if (!isUnusable(err)) throw err;
      log(`run ${runId}: checkpoint step ${m.step} is not usable: ${err.message}`);
    }
  }
  log(`run ${runId}: no complete checkpoint found`);
  return null;
}
