/**
 * Tracks a run: writes each stored step (metrics/step-N.json, the source of truth) that a tracker lacks,
 * in step order. Each tracker's own records say what it has (tensorboard.ts, mlflow.ts, wandb.ts), so a retried,
 * resumed or continued run, or `starpo track` after it, writes every step once. The control worker's
 * `track` activity and `starpo track` call it; this is the one place that dispatches on the tracker name.
 */
import { stringify } from 'yaml';
import type { RunSpec, SweepSpec } from '../contract';
import { type RunConfig, type TrackerName, trackersOf, validateRunId } from '../contract';
import { runKey, sweepKey } from '../storage/keys';
import type { ObjectStore } from '../storage/object_store';
import { listMetricSteps, readMetrics, type StoredStep } from '../storage/run_metrics';
import { withFolderLock } from './folder_lock';
import { type RunEnd, writeMlflow } from './mlflow';
import { MlflowClient, mlflowServer } from './mlflow_client';
import { appendSteps, openRunLog, runLogDir } from './tensorboard';
import { writeWandb } from './wandb';

/** Where one tracker writes. */
export type TrackTarget =
  /** The folder of the event files or W&B run files (a run's under <logDir>/<runId>). */
  | { tracker: 'tensorboard' | 'wandb'; logDir: string }
  /** The server (absent: MLFLOW_TRACKING_URI). */
  | { tracker: 'mlflow'; trackingUri?: string };

/** What one tracker did for a run. */
export interface TrackReport {
  tracker: TrackerName;
  /** The run's folder, or its MLflow server, experiment and run. */
  where: string;
  /** The steps written now. */
  written: number[];
  /** The highest step the tracker holds now (-1: none). */
  lastStep: number;
  /** Bytes of a cut record (a writer killed mid-write) removed first (tensorboard). */
  repairedBytes: number;
}

/** The target of `tracker` from a config's tracker_kwargs. */
export function targetOf(tracker: TrackerName, config: RunConfig): TrackTarget {
  const kwargs = config.tracker_kwargs;
  if (tracker !== 'mlflow') return { tracker, logDir: kwargs.log_dir ?? '' };
  return kwargs.tracking_uri === undefined ? { tracker } : { tracker, trackingUri: kwargs.tracking_uri };
}

/** The trackers a run's config names, with where they write. */
export function targetsOf(config: RunConfig): TrackTarget[] {
  return trackersOf(config).map((tracker) => targetOf(tracker, config));
}

/** A sweep child's id is `<sweepId>-seed<seed>` or `<sweepId>-g<point>-seed<seed>` (contract/run.ts sweepChildId). */
const CHILD_ID = /^(.+?)-(?:g\d+-)?seed-?\d+$/;

/** The sweep whose child `runId` is (its sweep.json lists the run), or null. */
export async function sweepOfRun(store: ObjectStore, runId: string): Promise<string | null> {
  const sweepId = CHILD_ID.exec(runId)?.[1];
  if (sweepId === undefined) return null;
  try {
    validateRunId(sweepId);
  } catch {
    return null;
  }
  if (!(await store.exists(sweepKey(sweepId)))) return null;
  const spec = await store.getJson<SweepSpec>(sweepKey(sweepId));
  return spec.children.some((c) => c.run.runId === runId) ? sweepId : null;
}

/**
 * Writes the stored steps that each target lacks; with `end`, a tracker that keeps it (mlflow) also gets
 * the report and how the run ended.
 * @param targets default: the trackers of the run's config
 * @throws what the store, the file system or a server throws (the caller decides whether a tracker failing matters)
 */
export async function trackRun(store: ObjectStore, runId: string, targets?: TrackTarget[], end?: RunEnd): Promise<TrackReport[]> {
  const spec = await store.getJson<RunSpec>(runKey(runId));
  const chosen = targets ?? targetsOf(spec.config);
  if (chosen.length === 0) return [];
  const sweepId = await sweepOfRun(store, runId);
  const stored = await listMetricSteps(store, runId);
  const reports: TrackReport[] = [];
  for (const target of chosen) {
    if (target.tracker === 'mlflow') {
      const client = new MlflowClient(mlflowServer(target.trackingUri));
      const out = await writeMlflow(client, store, spec, stored, sweepId, end);
      reports.push({ tracker: 'mlflow', ...out, repairedBytes: 0 });
      continue;
    }
    if (!target.logDir) throw new Error(`run ${runId}: ${target.tracker} needs tracker_kwargs.log_dir, and its config has none`);
    const dir = runLogDir(target.logDir, runId, sweepId);
    if (target.tracker === 'wandb') {
      const out = await withFolderLock(dir, () => writeWandb(store, spec, stored, sweepId, dir));
      reports.push({ tracker: 'wandb', where: dir, ...out, repairedBytes: 0 });
    } else reports.push(await withFolderLock(dir, () => writeTensorBoard(store, spec, stored, dir)));
  }
  return reports;
}

/** Appends the stored steps past the folder's last step (holding its lock). */
async function writeTensorBoard(store: ObjectStore, spec: RunSpec, stored: StoredStep[], dir: string): Promise<TrackReport> {
  const state = openRunLog(dir);
  const todo = stored.filter((s) => s.step > state.lastStep);
  const metrics = await readMetrics(
    store,
    spec.runId,
    todo.map((s) => s.step),
  );
  const steps = metrics.map((m, i) => ({
    step: m.step,
    metrics: m.metrics,
    wallTime: (todo[i]?.lastModified?.getTime() ?? Date.now()) / 1000,
  }));
  const written = appendSteps(dir, state, steps, configText(spec));
  return { tracker: 'tensorboard', where: dir, written, lastStep: written.at(-1) ?? state.lastStep, repairedBytes: state.repairedBytes };
}

/** The run's resolved config as TensorBoard's text plugin shows it (markdown: an indented block is code). */
function configText(spec: RunSpec): string {
  const yaml = stringify({ runId: spec.runId, configName: spec.configName, config: spec.config });
  return yaml
    .trimEnd()
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}
