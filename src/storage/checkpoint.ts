/**
 * The checkpoint of a run step, in one module: its files (HF-named weights, config, tokenizer, trainer state,
 * and the optimizer state), written as objects with the manifest LAST and read back with every sha256
 * verified; the latest.json / initial.json pointers; the search for the newest usable checkpoint; and which
 * optimizer states the store keeps (save_steps, max_ckpt_to_keep). docs/durability.md tells the story.
 */

import { AdamW } from '../algo/adamw';
import {
  type CheckpointManifest,
  type ComputeInfo,
  checkpointManifestSchema,
  type LatestPointer,
  latestPointerSchema,
  type ObjectRef,
  type RunConfig,
  validateRunId,
} from '../contract';
import { tokenizerFromFiles } from '../model/hf/tokenizer';
import { configFromJSONBytes, configToJSONBytes, modelFromSafetensors, modelToSafetensors } from '../model/hf/weights';
import type { Qwen2 } from '../model/qwen2';
import type { ChatTokenizer } from '../model/tokenizer';
import { ValueModel } from '../model/value_model';
import { CorruptObjectError, isUnusable, ObjectNotFoundError } from './errors';
import { checkpointsPrefix, initialKey, latestKey, MANIFEST_NAME, parseStep } from './keys';
import type { ObjectStore } from './object_store';

/**
 * Name of the second manifest of a checkpoint: it commits the optimizer state (optimizer.safetensors and, for
 * gae runs, critic_optimizer.safetensors), written before manifest.json so a checkpoint that exists has it.
 * A manifest of its own, so the store can drop an old optimizer state and keep the step's weights.
 */
export const OPTIMIZER_MANIFEST_NAME = 'optimizer_manifest.json';
const OPTIMIZER_FILES = ['optimizer.safetensors', 'critic_optimizer.safetensors'];

const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

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
 * Writes every file under `prefix` (e.g. checkpointPrefix(runId, step)), THEN `<prefix><manifestName>`
 * with each object's key, bytes and sha256, `meta` and `createdAt`. Idempotent: when a manifest with the
 * same objects and meta already exists (a retried activity), it is kept and its reference returned.
 * @throws Error when prefix does not end with `/` or a file name is not [A-Za-z0-9._-] (or is a manifest's).
 */
export async function writeCheckpoint(
  store: ObjectStore,
  prefix: string,
  files: Record<string, Uint8Array>,
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
  const refs = await mapLimit(names, 4, (name) => store.put(`${prefix}${name}`, files[name] as Uint8Array));
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
 * then reads and verifies every object it lists.
 * @throws CorruptObjectError (bad bytes or malformed manifest, names the key), ObjectNotFoundError (missing object).
 */
export async function readCheckpoint(store: ObjectStore, manifest: ObjectRef | string): Promise<LoadedCheckpoint> {
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
    files[o.name] = await store.get({ bucket: ref.bucket, key: o.key, sha256: o.sha256, bytes: o.bytes });
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
  const optimizerSteps = new Set(listed.filter((k) => k.endsWith(`/${OPTIMIZER_MANIFEST_NAME}`)).map(parseStep));
  const candidates: Array<{ step: number; manifest: ObjectRef | string }> = listed
    .filter((key) => key.endsWith(`/${MANIFEST_NAME}`))
    .map((key) => ({ manifest: key, step: parseStep(key) }))
    .filter(
      (o): o is { manifest: string; step: number } => o.step !== null && o.step < below && (!withOptimizer || optimizerSteps.has(o.step)),
    )
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

/** What trainer_state.json holds. */
export interface TrainerState {
  /** Pipeline steps (updates) completed when this checkpoint was written. */
  step: number;
  /** AdamW settings the optimizer state belongs to. */
  betas: [number, number];
  weightDecay: number;
  /** AdamW settings of the critic's optimizer (gae runs). */
  criticOptimizer?: { betas: [number, number]; weightDecay: number };
  /** Scalar facts about how the checkpoint was made (metrics of its update or warm-up). */
  metrics: Record<string, number>;
  /** Beta of the token-level KL after this step (adaptive controller state; docs/numerics.md §6). */
  klCoef?: number;
  /** Manifest of the run's step-0 policy: the frozen reference of the KL terms. Absent in the step-0 checkpoint itself. */
  reference?: ObjectRef;
  /** Why this step's update made no optimizer step (StarPO-S filter kept nothing), when it did not. */
  skipReason?: string;
  /** Where the update that wrote this checkpoint computed. */
  compute?: ComputeInfo;
}

/** A loaded checkpoint. The caller owns (and disposes) the model and optimizer. */
export interface PolicyCheckpoint {
  model: Qwen2;
  tokenizer: ChatTokenizer;
  /** null when not loaded, or when the checkpoint has none (the step-0 warm-up): start a fresh AdamW then. */
  optimizer: AdamW | null;
  /** The gae critic and its optimizer; null before the first gae update (the critic starts from the policy). */
  critic: ValueModel | null;
  criticOptimizer: AdamW | null;
  state: TrainerState;
}

/** Frees every model and optimizer of a loaded checkpoint. */
export function disposeCheckpoint(c: PolicyCheckpoint): void {
  c.model.dispose();
  c.optimizer?.dispose();
  c.critic?.dispose();
  c.criticOptimizer?.dispose();
}

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value, null, 1));

/** The trainer_state.json of a checkpoint's files (as read by readCheckpoint). */
export function trainerStateOf(files: Record<string, Uint8Array>): TrainerState {
  return JSON.parse(new TextDecoder().decode(files['trainer_state.json'])) as TrainerState;
}

/**
 * Writes a checkpoint under `prefix` and returns its manifest ref: the optimizer state first (with its own
 * manifest, when the checkpoint carries one), then the weights, config, tokenizer (with an HF folder's chat
 * files), trainer_state.json and `extraFiles` (e.g. trajectory_scores.json), manifest.json last.
 * @throws Error from the object store (retried by Temporal)
 */
export async function saveCheckpoint(
  store: ObjectStore,
  prefix: string,
  c: Pick<PolicyCheckpoint, 'model' | 'tokenizer' | 'optimizer' | 'state'> & Partial<Pick<PolicyCheckpoint, 'critic' | 'criticOptimizer'>>,
  extraFiles: Record<string, Uint8Array> = {},
): Promise<ObjectRef> {
  const meta = { step: c.state.step };
  const optimizer: Record<string, Uint8Array> = {};
  if (c.optimizer) optimizer['optimizer.safetensors'] = await c.optimizer.toSafetensors();
  if (c.criticOptimizer) optimizer['critic_optimizer.safetensors'] = await c.criticOptimizer.toSafetensors();
  if (Object.keys(optimizer).length > 0) await writeCheckpoint(store, prefix, optimizer, meta, OPTIMIZER_MANIFEST_NAME);
  const files: Record<string, Uint8Array> = {
    ...extraFiles,
    ...c.tokenizer.chatFiles,
    'model.safetensors': await modelToSafetensors(c.model),
    'config.json': configToJSONBytes(c.model.config),
    'tokenizer.json': json(c.tokenizer.toJSON()),
    'trainer_state.json': json(c.state),
  };
  if (c.critic) files['critic.safetensors'] = await c.critic.toSafetensors();
  return writeCheckpoint(store, prefix, files, meta);
}

/**
 * The optimizer files of the checkpoint whose manifest.json is at `manifestKey`, verified.
 * @throws ObjectNotFoundError when it kept no optimizer state, CorruptObjectError when it is damaged
 */
export async function readOptimizerFiles(store: ObjectStore, manifestKey: string): Promise<Record<string, Uint8Array>> {
  const key = `${manifestKey.slice(0, manifestKey.length - MANIFEST_NAME.length)}${OPTIMIZER_MANIFEST_NAME}`;
  return (await readCheckpoint(store, key)).files;
}

/**
 * Adds the optimizer state to a checkpoint loaded without it (a no-op when it has one, or for the step-0
 * warm-up, which has none).
 * @throws ObjectNotFoundError when the store no longer keeps it, CorruptObjectError when it is damaged
 */
export async function attachOptimizer(store: ObjectStore, manifest: ObjectRef, c: PolicyCheckpoint): Promise<void> {
  if (c.optimizer || c.state.step === 0) return;
  setOptimizers(c, await readOptimizerFiles(store, manifest.key));
}

/** Builds the checkpoint's optimizers from optimizer files (AdamW settings from its trainer state). */
function setOptimizers(c: PolicyCheckpoint, files: Record<string, Uint8Array>): void {
  const s = c.state;
  c.optimizer = AdamW.fromSafetensors(files['optimizer.safetensors'], { betas: s.betas, weightDecay: s.weightDecay });
  const critic = files['critic_optimizer.safetensors'];
  if (critic && s.criticOptimizer) c.criticOptimizer = AdamW.fromSafetensors(critic, s.criticOptimizer);
}

/**
 * Reads and verifies (sha256) a checkpoint and builds the model, tokenizer and critic; with `withOptimizer`
 * also its optimizer state (what an update continues from).
 * @throws CorruptObjectError when an object does not match its manifest, ObjectNotFoundError when one is missing
 */
export async function loadCheckpoint(store: ObjectStore, manifest: ObjectRef, withOptimizer = false): Promise<PolicyCheckpoint> {
  const { files } = await readCheckpoint(store, manifest);
  const config = configFromJSONBytes(files['config.json']);
  const state = trainerStateOf(files);
  const model = modelFromSafetensors(config, files['model.safetensors']);
  const tokenizer = tokenizerFromFiles(files, (name) => `${manifest.key}: ${name}`);
  const critic = files['critic.safetensors'] ? ValueModel.fromSafetensors(config, files['critic.safetensors']) : null;
  const c: PolicyCheckpoint = { model, tokenizer, optimizer: null, critic, criticOptimizer: null, state };
  // Checkpoints written before the optimizer state had a manifest of its own list it in manifest.json.
  if (withOptimizer && files['optimizer.safetensors']) setOptimizers(c, files);
  else if (withOptimizer) {
    try {
      await attachOptimizer(store, manifest, c);
    } catch (err) {
      disposeCheckpoint(c);
      throw err;
    }
  }
  return c;
}

/**
 * Whether checkpoint step `step` is a full checkpoint the store keeps (save_steps, as ROLL's do_checkpoint:
 * after the update of pipeline step g = step - 1 when g > 0 and g % save_steps == 0, and after the last step).
 */
export function isFullCheckpoint(step: number, config: Pick<RunConfig, 'save_steps' | 'max_steps'>): boolean {
  const g = step - 1;
  return (g > 0 && g % config.save_steps === 0) || step === config.max_steps;
}

/**
 * The steps whose optimizer state may go once checkpoint step `newest` is written: every step in `present`
 * before it except the step before it (`newest` is what the next update, a retry or a resume continues
 * from; the step before is where a run whose newest checkpoint is damaged replays from) and the newest
 * max_ckpt_to_keep full checkpoints (all of them when 0, as ROLL). Steps after `newest` (left by a replayed
 * stretch) are not touched. The weights of every step stay.
 */
export function optimizerStepsToDrop(
  present: readonly number[],
  newest: number,
  config: Pick<RunConfig, 'save_steps' | 'max_steps' | 'max_ckpt_to_keep'>,
): number[] {
  const older = present.filter((s) => s < newest - 1).sort((a, b) => b - a);
  const full = older.filter((s) => isFullCheckpoint(s, config));
  const keptFull = new Set(
    config.max_ckpt_to_keep > 0 ? full.slice(0, Math.max(0, config.max_ckpt_to_keep - (isFullCheckpoint(newest, config) ? 1 : 0))) : full,
  );
  return older.filter((s) => !keptFull.has(s)).sort((a, b) => a - b);
}

/**
 * Deletes the optimizer states optimizerStepsToDrop names (its manifest first, so a half-deleted state reads as
 * absent, never as damaged) and logs each. Called by the update once checkpoint step `newest` and latest.json are written.
 */
export async function dropOldOptimizerStates(
  store: ObjectStore,
  runId: string,
  newest: number,
  config: Pick<RunConfig, 'save_steps' | 'max_steps' | 'max_ckpt_to_keep'>,
  log: (line: string) => void = () => undefined,
): Promise<number[]> {
  const manifests = (await store.list(checkpointsPrefix(runId))).map((o) => o.key).filter((k) => k.endsWith(`/${OPTIMIZER_MANIFEST_NAME}`));
  const byStep = new Map(manifests.map((k) => [parseStep(k), k] as const).filter((e): e is [number, string] => e[0] !== null));
  const drop = optimizerStepsToDrop([...byStep.keys()], newest, config);
  for (const step of drop) {
    const key = byStep.get(step)!;
    const prefix = key.slice(0, key.length - OPTIMIZER_MANIFEST_NAME.length);
    await store.remove(key);
    for (const name of OPTIMIZER_FILES) await store.remove(`${prefix}${name}`);
    log(
      `run ${runId}: dropped the optimizer state of checkpoint step ${step} (not a full checkpoint kept by save_steps ${config.save_steps}, max_ckpt_to_keep ${config.max_ckpt_to_keep}); its weights stay`,
    );
  }
  return drop;
}
