/**
 * Per-process state of the activity workers: the object store, the run configs read from
 * runs/<run>/run.json, and a one-entry cache of the last checkpoint used (so consecutive steps on
 * the same worker do not reload weights). Everything can be rebuilt from the store, so a restarted
 * worker continues where a dead one stopped. Also the heartbeat every activity sends.
 */
import { Context, log } from '@temporalio/activity';
import type { ObjectRef, RunSpec, Trajectory } from '../contract';
import { backendInfo } from '../model/backend';
import type { Qwen2 } from '../model/qwen2';
import { readCheckpointFile, readCompleteBefore } from '../storage/checkpoint';
import { runKey } from '../storage/keys';
import type { ObjectStore } from '../storage/object_store';
import { attachOptimizer, disposeCheckpoint, loadCheckpoint, type PolicyCheckpoint, trainerStateOf } from '../storage/policy_checkpoint';
import type { ReplaySource } from '../workflows/fallback';
import { mustStop, relayHeartbeat } from './heartbeat_relay';
import { reportProgress, setWatchdogLimit } from './watchdog';

/** The cache key of a checkpoint: its manifest's key and sha256. */
const keyOf = (manifest: ObjectRef) => `${manifest.key}@${manifest.sha256}`;

/** Activity dependencies and caches of one worker process. */
export class ActivityRuntime implements ReplaySource<PolicyCheckpoint> {
  private readonly runs = new Map<string, RunSpec>();
  private cached: { key: string; checkpoint: PolicyCheckpoint } | null = null;
  private referenceCache: { key: string; checkpoint: PolicyCheckpoint } | null = null;

  constructor(readonly store: ObjectStore) {}

  /** The stored run spec (read once per process); sets this process's watchdog limit to the run's watchdog_seconds. */
  async run(runId: string): Promise<RunSpec> {
    let run = this.runs.get(runId);
    if (!run) {
      run = (await this.store.getJson(runKey(runId))) as RunSpec;
      this.runs.set(runId, run);
    }
    // Runs stored before the key existed have none: keep the default.
    if (run.config.watchdog_seconds !== undefined) setWatchdogLimit(run.config.watchdog_seconds);
    return run;
  }

  /** The ref of an existing object (content hashed), or null when there is none. */
  async existing(key: string): Promise<ObjectRef | null> {
    return (await this.store.exists(key)) ? this.store.refOf(key) : null;
  }

  /**
   * The checkpoint behind a manifest ref, from the cache or the store, with its optimizer state when
   * `withOptimizer` (an update). Taking it out of the cache hands ownership to the caller, who must `keep`
   * it again (or dispose it).
   * @throws CorruptObjectError / ObjectNotFoundError when the checkpoint (or the optimizer state asked for) is unusable
   */
  async take(manifest: ObjectRef, withOptimizer = false): Promise<PolicyCheckpoint> {
    const key = keyOf(manifest);
    if (this.cached?.key !== key) {
      // A LoRA run's next checkpoint is new adapters on the same base: the cached model is kept, only the adapters
      // are read. Otherwise the cache is freed before the load, not after: a worker that moves to another run or
      // checkpoint holds one policy, not two (weights and AdamW moments: 6 GB at Qwen2.5-0.5B).
      const base = await this.cachedBaseOf(manifest);
      if (!base) this.drop();
      return loadCheckpoint(this.store, manifest, withOptimizer, base ?? undefined);
    }
    const hit = this.cached.checkpoint;
    this.cached = null;
    if (withOptimizer) {
      try {
        await attachOptimizer(this.store, manifest, hit); // cached by a rollout of the same process
      } catch (err) {
        disposeCheckpoint(hit);
        throw err;
      }
    }
    return hit;
  }

  /** The newest checkpoint before `step` an update can continue from (ReplaySource), logging what it skips. */
  async trainableBefore(runId: string, step: number): Promise<{ step: number; ref: ObjectRef } | null> {
    return readCompleteBefore(this.store, runId, step, (line) => log.warn(line), true);
  }

  /** A shard's trajectories, verified (ReplaySource). */
  trajectories(shard: ObjectRef): Promise<Trajectory[]> {
    return this.store.getJsonlGz<Trajectory>(shard);
  }

  warn(line: string): void {
    log.warn(line);
  }

  /** Caches a checkpoint under its manifest ref, disposing the previous one. */
  keep(manifest: ObjectRef, checkpoint: PolicyCheckpoint): void {
    this.drop();
    this.cached = { key: keyOf(manifest), checkpoint };
  }

  /**
   * The cached model, its adapters, optimizers and critic freed, when `manifest` is an adapter checkpoint on the
   * weights the cache holds (its base, or the cached checkpoint itself); else null.
   */
  private async cachedBaseOf(manifest: ObjectRef): Promise<Qwen2 | null> {
    const cached = this.cached;
    if (!cached) return null;
    const bytes = await readCheckpointFile(this.store, manifest.key, 'trainer_state.json');
    const base = bytes ? trainerStateOf({ 'trainer_state.json': bytes }).base : undefined;
    const cachedBase = cached.checkpoint.state.base ? keyOf(cached.checkpoint.state.base) : cached.key;
    if (!base || keyOf(base) !== cachedBase) return null;
    this.cached = null;
    const { model, optimizer, critic, criticOptimizer } = cached.checkpoint;
    for (const held of [optimizer, critic, criticOptimizer]) held?.dispose();
    model.setAdapters(null);
    return model;
  }

  private drop(): void {
    if (this.cached) disposeCheckpoint(this.cached.checkpoint);
    this.cached = null;
  }

  /**
   * The frozen reference policy behind a manifest (docs/numerics.md §6 KL terms), loaded once per process and
   * owned by the runtime: callers must not dispose or train it.
   */
  async reference(manifest: ObjectRef): Promise<Qwen2> {
    const key = keyOf(manifest);
    if (this.referenceCache?.key !== key) {
      if (this.referenceCache) disposeCheckpoint(this.referenceCache.checkpoint);
      this.referenceCache = { key, checkpoint: await loadCheckpoint(this.store, manifest) };
    }
    return this.referenceCache.checkpoint.model;
  }
}

/**
 * Heartbeats (with optional details, to which the backend and device computing them are added as `backend`
 * and `device`, so the Temporal UI's pending-activity details show them), counts as
 * progress for the worker's watchdog (watchdog.ts), hands the details to the heartbeat relay (heartbeat_relay.ts,
 * which heartbeats for the activity while it computes) and yields the event loop so the heartbeat is sent. Called between generation turns and micro-batches, it is
 * also where a cancelled activity stops: after the worker's
 * shutdownGraceTime (worker shutdown), or when the server no longer knows the activity (the run was
 * terminated or the attempt timed out).
 * @throws CancelledFailure once the activity is cancelled (the caller's finally/catch blocks clean up).
 */
export async function heartbeat(details?: unknown): Promise<void> {
  const context = Context.current();
  const shown = details !== null && typeof details === 'object' ? { ...details, ...backendInfo() } : details;
  reportProgress();
  relayHeartbeat(context.info.base64TaskToken, shown);
  context.heartbeat(shown);
  await new Promise((resolve) => setImmediate(resolve));
  if (mustStop(context)) throw context.cancellationSignal.reason;
}
