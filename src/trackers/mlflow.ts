/**
 * A run's MLflow run: one per starpo run, found by its tag `starpo.run_id` in the experiment (the sweep id
 * for a sweep's run, else tracker_kwargs.project, else the config's exp_name), so a resumed or continued
 * run, or `starpo track`, writes into the same one. Params are the resolved config (flattened keys), the
 * config also as config.yaml; metrics are every stored step at its global step, timestamped with the time
 * the step's metrics object was stored; at the run's end the report (report.html) and the run's status.
 *
 * Each step once: the tag `starpo.last_step`, set after a batch is logged, is the cursor. A writer killed
 * between the two sends the batch again; MLflow's SQL stores keep one row per (key, step, timestamp, value),
 * and the timestamps come from the store, so the second send adds nothing (a file store would keep both).
 */
import { stringify } from 'yaml';
import type { RunSpec, TrackEnd } from '../contract';
import type { ObjectStore } from '../storage/object_store';
import { readMetrics, type StoredStep } from '../storage/run_metrics';
import { MLFLOW_LIMITS, type MlflowClient, type MlflowMetric, type MlflowPair, type MlflowRun, tagOf } from './mlflow_client';

/** Tags starpo sets on its MLflow runs. */
export const MLFLOW_TAGS = {
  runId: 'starpo.run_id',
  sweepId: 'starpo.sweep_id',
  lastStep: 'starpo.last_step',
  params: 'starpo.params_logged',
} as const;

/** The report's artifact path. */
export const REPORT_ARTIFACT = 'report.html';

/** How the run ended (its report's state line, its MLflow status) and its report's HTML. */
export interface RunEnd extends TrackEnd {
  report: (spec: RunSpec) => Promise<string>;
}

/** What the MLflow side holds after a call. */
export interface MlflowOutcome {
  /** `<server> experiment "<name>" run <id>`. */
  where: string;
  written: number[];
  lastStep: number;
}

/** The experiment of a run: its sweep's id, else tracker_kwargs.project, else exp_name. */
export function experimentOf(spec: RunSpec, sweepId: string | null): string {
  return sweepId ?? spec.config.tracker_kwargs.project ?? spec.config.exp_name;
}

/**
 * The config as params: `a.b.c` keys, lists and null as JSON, values cut to MLflow's length limit (the
 * whole config is in config.yaml). Keys over MLflow's limit are left out.
 */
export function configParams(config: object): MlflowPair[] {
  const out: MlflowPair[] = [];
  const walk = (value: unknown, key: string) => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) walk(v, key ? `${key}.${k}` : k);
      return;
    }
    if (key.length > MLFLOW_LIMITS.key) return;
    const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
    const max = MLFLOW_LIMITS.paramValue;
    out.push({ key, value: text.length > max ? `${text.slice(0, max - 3)}...` : text });
  };
  walk(config, '');
  return out;
}

/**
 * The run tagged with the starpo run id, created when missing. Two writers that both found none make two:
 * the older is kept and the newer deleted, so both go on in the same run.
 */
async function runOf(client: MlflowClient, experimentId: string, spec: RunSpec, sweepId: string | null): Promise<MlflowRun> {
  const found = await client.runsTagged(experimentId, MLFLOW_TAGS.runId, spec.runId);
  if (found[0]) return found[0];
  const tags: MlflowPair[] = [{ key: MLFLOW_TAGS.runId, value: spec.runId }];
  if (sweepId !== null) tags.push({ key: MLFLOW_TAGS.sweepId, value: sweepId });
  const mine = await client.createRun(experimentId, spec.runId, tags);
  const all = await client.runsTagged(experimentId, MLFLOW_TAGS.runId, spec.runId);
  const kept = all[0] ?? mine;
  if (kept.info.run_id !== mine.info.run_id) await client.deleteRun(mine.info.run_id);
  return kept;
}

/**
 * Logs to the run's MLflow run what it lacks: the params, the stored steps past its cursor, and (with
 * `end`) the report and the run's status.
 * @param stored the run's stored steps, ascending
 * @throws MlflowError / Error when the server fails (the caller decides whether that matters)
 */
export async function writeMlflow(
  client: MlflowClient,
  store: ObjectStore,
  spec: RunSpec,
  stored: StoredStep[],
  sweepId: string | null,
  end?: RunEnd,
): Promise<MlflowOutcome> {
  const experiment = experimentOf(spec, sweepId);
  const run = await runOf(client, await client.experimentId(experiment), spec, sweepId);
  const id = run.info.run_id;
  if (tagOf(run, MLFLOW_TAGS.params) === undefined) {
    const yaml = stringify({ runId: spec.runId, configName: spec.configName, config: spec.config });
    await client.putArtifact(run, 'config.yaml', yaml, 'application/yaml');
    await client.logBatch(id, { params: configParams(spec.config) });
    await client.setTag(id, MLFLOW_TAGS.params, 'true');
  }
  let lastStep = Number(tagOf(run, MLFLOW_TAGS.lastStep) ?? -1);
  const todo = stored.filter((s) => s.step > lastStep);
  const metrics = await readMetrics(
    store,
    spec.runId,
    todo.map((s) => s.step),
  );
  const written: number[] = [];
  // Whole steps, as many as fit one log-batch request; the cursor follows each request.
  let batch: MlflowMetric[] = [];
  for (const [i, m] of metrics.entries()) {
    const timestamp = todo[i]?.lastModified?.getTime() ?? Date.now();
    batch.push(...Object.entries(m.metrics).map(([key, value]) => ({ key, value, timestamp, step: m.step })));
    const next = Object.keys(metrics[i + 1]?.metrics ?? {}).length;
    if (i + 1 < metrics.length && batch.length + next <= MLFLOW_LIMITS.metricsPerBatch) continue;
    await client.logBatch(id, { metrics: batch });
    await client.setTag(id, MLFLOW_TAGS.lastStep, String(m.step));
    written.push(...todo.slice(written.length, i + 1).map((s) => s.step));
    lastStep = m.step;
    batch = [];
  }
  if (end) {
    await client.putArtifact(run, REPORT_ARTIFACT, await end.report(spec), 'text/html');
    await client.endRun(id, end.status, Date.now());
  }
  return { where: `${client.server.uri} experiment "${experiment}" run ${id}`, written, lastStep };
}
