/**
 * What `starpo report` and `starpo trajectories` read from the object store besides the run spec
 * (cli/known_run.ts): every step's metrics (runs/<run>/metrics/step-N.json), the rollout shards of a
 * step through their commit records (sha256-verified trajectories) and the update's per-trajectory
 * scores (trajectory_scores.json of checkpoint step N+1, verified against its manifest).
 */

import type { StepMetrics, Trajectory } from '../contract';
import { shardRecordSchema } from '../contract';
import type { TrajectoryScoresFile } from '../contract/trajectory_scores';
import { readCheckpointFile } from '../storage/checkpoint';
import { isUnusable, ObjectNotFoundError } from '../storage/errors';
import { checkpointPrefix, MANIFEST_NAME, parseStep, rolloutRecordKey, runPrefix, TRAJECTORY_SCORES_NAME } from '../storage/keys';
import type { ObjectStore } from '../storage/object_store';
import { listMetricSteps, readMetrics } from '../storage/run_metrics';

/** Rollout shards of a run: for each split, step -> shard numbers, from the shard commit records. */
export type RolloutIndex = Record<'train' | 'val', Map<number, number[]>>;

/** Every stored step's metrics, ascending by step (the final validation is a step of its own, val/ keys only). */
export async function loadMetrics(store: ObjectStore, runId: string): Promise<StepMetrics[]> {
  return readMetrics(
    store,
    runId,
    (await listMetricSteps(store, runId)).map((s) => s.step),
  );
}

/** The steps and shards that have a commit record, by split. */
export async function rolloutIndex(store: ObjectStore, runId: string): Promise<RolloutIndex> {
  const index: RolloutIndex = { train: new Map(), val: new Map() };
  for (const o of await store.list(`${runPrefix(runId)}rollouts/`)) {
    const m = /\/(train|val)-shard-(\d{3})\.json$/.exec(o.key);
    const step = parseStep(o.key);
    if (!m || step === null) continue;
    const shards = index[m[1] as 'train' | 'val'];
    shards.set(
      step,
      [...(shards.get(step) ?? []), Number(m[2])].sort((a, b) => a - b),
    );
  }
  return index;
}

/**
 * The trajectories of one step and split, shard by shard, each verified against its commit record.
 * @throws CorruptObjectError / ObjectNotFoundError for a damaged or missing shard
 */
export async function loadTrajectories(
  store: ObjectStore,
  runId: string,
  step: number,
  split: 'train' | 'val',
  shards: readonly number[],
): Promise<Trajectory[]> {
  const parts = await Promise.all(
    shards.map(async (shard) => {
      const record = shardRecordSchema.parse(await store.getJson(rolloutRecordKey(runId, step, split, shard)));
      return store.getJsonlGz<Trajectory>(record.trajectories);
    }),
  );
  return parts.flat();
}

/**
 * The update's per-trajectory scores for the rollouts of `step`, or null when there are none: the
 * step's update has not been made, its checkpoint predates trajectory_scores.json, or the file is
 * damaged (reported through `warn`).
 */
export async function loadScores(
  store: ObjectStore,
  runId: string,
  step: number,
  warn: (line: string) => void,
): Promise<TrajectoryScoresFile | null> {
  try {
    const bytes = await readCheckpointFile(store, `${checkpointPrefix(runId, step + 1)}${MANIFEST_NAME}`, TRAJECTORY_SCORES_NAME);
    return bytes ? (JSON.parse(new TextDecoder().decode(bytes)) as TrajectoryScoresFile) : null;
  } catch (err) {
    if (err instanceof ObjectNotFoundError && err.key.endsWith(MANIFEST_NAME)) return null;
    if (!isUnusable(err)) throw err;
    warn(`step ${step}: trajectory scores not usable (${err.message}); shown without them`);
    return null;
  }
}
