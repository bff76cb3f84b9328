/**
 * `starpo status | pause | unpause | stop | list`: look at and operate runs through Temporal: the
 * workflow's `progress` query, its `pause` / `unpause` / `stop` updates (api.ts), its search
 * attributes and memo, and the visibility list of starpoTraining workflows.
 */
import {
  ApplicationFailure,
  type Client,
  type WorkflowExecutionDescription,
  WorkflowFailedError,
  type WorkflowHandle,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { idleQueues, pendingPhase } from '../activities/idle_queues';
import {
  type ControlReply,
  isKeyName,
  type Progress,
  pauseUpdate,
  progressQuery,
  type RunStatus,
  SEARCH_ATTRIBUTE_KEYS,
  type StarpoRunResult,
  stopUpdate,
  unpauseUpdate,
  WORKFLOW_TYPE,
} from '../contract';
import { describeCompute, formatNumber, progressLine } from '../workflows/format';
import { BadInputError, NoControlWorkerError } from './exit_codes';

/** Seconds a query waits for a control worker before the CLI reports that none answered. */
const QUERY_SECONDS = 5;

/** Metrics `starpo status` shows of the last step, when present. */
const STATUS_METRICS = [
  'env/success',
  'env/score',
  'actor/pg_loss',
  'actor/entropy',
  'actor/grad_norm',
  'critic/loss',
  'rollout/in_group_std',
  'time/step',
];

/** Describes the newest execution of a run. @throws WorkflowNotFoundError (exit 2) naming the run id when unknown */
export async function describeRun(handle: WorkflowHandle, runId: string): Promise<WorkflowExecutionDescription> {
  try {
    return await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError)
      throw new WorkflowNotFoundError(`unknown run id ${JSON.stringify(runId)} (see starpo list)`, runId, undefined);
    throw err;
  }
}

/**
 * The `progress` query's answer, or null when no control worker answers within QUERY_SECONDS, or the
 * server fails the query (it does when the worker that held the workflow went away mid-task).
 */
async function queryProgress(handle: WorkflowHandle): Promise<Progress | null> {
  // A deadline on the gRPC call itself, so an unanswered query does not keep the process alive.
  const deadline = Date.now() + QUERY_SECONDS * 1000;
  try {
    return await handle.client.connection.withDeadline(deadline, () => handle.query(progressQuery));
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw err;
    return null;
  }
}

/**
 * What failed the run: the first application failure of the chain (a failed activity's failure reads
 * "Activity task failed" and carries the activity's own failure as its cause).
 */
export function failureMessage(err: WorkflowFailedError): string {
  for (let f: unknown = err.cause; f instanceof Error; f = f.cause) if (f instanceof ApplicationFailure) return f.message;
  return err.cause?.message ?? err.message;
}

/** Collects a run's status. @throws WorkflowNotFoundError (exit 2) for an unknown run id */
export async function runStatus(client: Client, runId: string): Promise<RunStatus> {
  const handle = client.workflow.getHandle(runId);
  const d = await describeRun(handle, runId);
  const attrs = d.typedSearchAttributes;
  const out: RunStatus = {
    runId,
    status: d.status.name,
    config: attrs.get(SEARCH_ATTRIBUTE_KEYS.config) ?? null,
    step: attrs.get(SEARCH_ATTRIBUTE_KEYS.step) ?? null,
    valSuccess: attrs.get(SEARCH_ATTRIBUTE_KEYS.valSuccess) ?? null,
  };
  if (out.status === 'RUNNING') {
    const progress = await queryProgress(handle);
    if (progress) out.progress = progress;
    else {
      out.phase = pendingPhase(d);
      out.maxSteps = typeof d.memo?.maxSteps === 'number' ? d.memo.maxSteps : null;
      out.note = `no control worker answered within ${QUERY_SECONDS} s; what follows is what the server holds; start workers with: starpo resume ${runId}`;
    }
    const idle = await idleQueues(client, d, !progress);
    if (idle.length > 0) out.idleQueues = idle;
  } else if (out.status === 'COMPLETED') {
    const result: StarpoRunResult = await handle.result();
    out.result = result;
    if (result.stoppedBy) out.note = `stopped early; continue it with: starpo resume ${runId}`;
  } else {
    try {
      await handle.result();
    } catch (err) {
      if (!(err instanceof WorkflowFailedError)) throw err;
      out.failure = failureMessage(err);
    }
    out.note = `the run is closed; continue it from its latest checkpoint with: starpo resume ${runId}`;
  }
  return out;
}

const pick = (metrics: Record<string, number>, keys: string[]) =>
  keys
    .filter((k) => k in metrics)
    .map((k) => `${k} ${formatNumber(metrics[k], 4)}`)
    .join(' · ');

/** The readable form of a RunStatus, one "label  value" line each. */
export function formatStatus(s: RunStatus): string[] {
  const row = (label: string, value: string) => `${label.padEnd(11)} ${value}`;
  const lines = [row('run', `${s.runId} · ${s.status} · config ${s.config ?? '-'}`)];
  const p = s.progress;
  if (p) {
    lines.push(row('progress', progressLine(p)), row('phase', p.phase + (p.stopRequested ? ` (stopping: ${p.stopRequested})` : '')));
    if (Object.keys(p.lastMetrics).length > 0) lines.push(row('last step', pick(p.lastMetrics, STATUS_METRICS) || '-'));
    if (p.lastValidation)
      lines.push(
        row('validation', `step ${p.lastValidation.step}: ${pick(p.lastValidation.metrics, ['val/env/success', 'val/score']) || '-'}`),
      );
    if (p.compute) lines.push(row('compute', describeCompute(p.compute)));
    if (p.trackerNote) lines.push(row('tracker', p.trackerNote));
    lines.push(row('checkpoint', p.latestCheckpoint?.key ?? '-'));
  } else if (s.result) {
    const r = s.result;
    lines.push(row('result', `${r.steps} steps${r.stoppedBy ? ` · stopped by ${r.stoppedBy}` : ''}`));
    if (Object.keys(r.lastMetrics).length > 0) lines.push(row('last step', pick(r.lastMetrics, STATUS_METRICS) || '-'));
    if (r.validationCurve.length > 0)
      lines.push(row('validation', r.validationCurve.map((v) => `${v.step}: ${formatNumber(v.success)}`).join(', ')));
    lines.push(row('checkpoint', r.finalCheckpoint.key));
  } else {
    const max = s.maxSteps ? `/${s.maxSteps}` : '';
    lines.push(row('step', `${s.step ?? '-'}${max} · val success ${formatNumber(s.valSuccess)}`));
    if (s.phase) lines.push(row('phase', `${s.phase} (from the pending activities)`));
    if (s.failure) lines.push(row('failure', s.failure));
  }
  for (const idle of s.idleQueues ?? []) lines.push(row('no worker', idle));
  if (s.note) lines.push(row('note', s.note));
  return lines;
}

/** The three control updates by CLI command name. */
const CONTROLS = { pause: pauseUpdate, unpause: unpauseUpdate, stop: stopUpdate } as const;

/**
 * Sends `pause`, `unpause` or `stop` to a running run and returns the workflow's reply.
 * @throws WorkflowNotFoundError or BadInputError (exit 2) for an unknown run id, a closed run or a
 *   rejected request; NoControlWorkerError (exit 3) when no control worker answers
 */
export async function sendControl(client: Client, runId: string, action: keyof typeof CONTROLS, reason?: string): Promise<ControlReply> {
  const handle = client.workflow.getHandle(runId);
  const status = (await describeRun(handle, runId)).status.name;
  if (status !== 'RUNNING') throw new BadInputError(`run ${runId} is ${status.toLowerCase()}; nothing to ${action}`);
  // An update waits for a control worker; check that one answers instead of hanging.
  if (!(await queryProgress(handle))) {
    throw new NoControlWorkerError(
      `no control worker answered within ${QUERY_SECONDS} s; start one (starpo resume ${runId}, or starpo worker --role control) and try again`,
    );
  }
  try {
    if (action === 'stop') return await handle.executeUpdate(stopUpdate, { args: [reason ?? ''] });
    return await handle.executeUpdate(CONTROLS[action]);
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) throw new BadInputError(`${action} rejected: ${err.cause?.message ?? err.message}`);
    throw err;
  }
}

/** What the reply of a control update means, in words. */
export function describeReply(runId: string, action: keyof typeof CONTROLS, r: ControlReply): string {
  const at = r.takesEffectAtStep === r.step ? `at step ${r.step}` : `after step ${r.takesEffectAtStep} (the step in flight finishes first)`;
  if (action === 'pause')
    return r.phase === 'paused'
      ? `run ${runId} is paused at step ${r.step}`
      : `run ${runId} pauses ${at}; continue it with: starpo unpause ${runId}`;
  if (action === 'unpause') return `run ${runId} continues from step ${r.takesEffectAtStep}`;
  return `run ${runId} stops ${at}, then runs its final validation when eval_steps > 0; follow it with: starpo status ${runId}`;
}

/** One row of `starpo list`. */
export interface RunRow {
  runId: string;
  status: string;
  paused: boolean;
  step: number | null;
  maxSteps: number | null;
  config: string | null;
  valSuccess: number | null;
  started: string;
}

/**
 * When each run began: the earliest start over all executions of its workflow id (the first of a
 * continueAsNew chain, or the execution a resume followed), one visibility query for all of them. Ids
 * outside the run-id rule (isKeyName) are left to the caller, so nothing inside the query needs quoting.
 */
async function firstStarts(client: Client, ids: string[]): Promise<Map<string, Date>> {
  const starts = new Map<string, Date>();
  const quoted = ids.filter(isKeyName).map((id) => `'${id}'`);
  if (quoted.length === 0) return starts;
  for await (const w of client.workflow.list({ query: `WorkflowId IN (${quoted.join(', ')})` })) {
    const known = starts.get(w.workflowId);
    if (!known || w.startTime < known) starts.set(w.workflowId, w.startTime);
  }
  return starts;
}

/**
 * The newest execution of each run (workflow type starpoTraining; runs closed by continueAsNew are
 * left out), newest first; `started` is when the run began (firstStarts).
 * @param query a Temporal list filter ANDed to that, e.g. `StarpoConfig = "frozen_lake"`
 */
export async function listRuns(client: Client, opts: { query?: string; limit: number }): Promise<RunRow[]> {
  let query = `WorkflowType = '${WORKFLOW_TYPE}' AND ExecutionStatus != 'ContinuedAsNew'`;
  if (opts.query) query += ` AND (${opts.query})`;
  const rows: RunRow[] = [];
  const seen = new Set<string>();
  for await (const w of client.workflow.list({ query })) {
    if (seen.has(w.workflowId)) continue; // a restarted run: its older closed executions
    seen.add(w.workflowId);
    const a = w.typedSearchAttributes;
    rows.push({
      runId: w.workflowId,
      status: w.status.name,
      paused: w.memo?.paused === true,
      step: a.get(SEARCH_ATTRIBUTE_KEYS.step) ?? null,
      maxSteps: typeof w.memo?.maxSteps === 'number' ? w.memo.maxSteps : null,
      config: a.get(SEARCH_ATTRIBUTE_KEYS.config) ?? null,
      valSuccess: a.get(SEARCH_ATTRIBUTE_KEYS.valSuccess) ?? null,
      started: w.startTime.toISOString(),
    });
    if (rows.length >= opts.limit) break;
  }
  const starts = await firstStarts(
    client,
    rows.map((r) => r.runId),
  );
  return rows.map((r) => ({ ...r, started: starts.get(r.runId)?.toISOString() ?? r.started }));
}

/** `starpo list` as an aligned table. */
export function formatRuns(rows: RunRow[]): string[] {
  const table = [
    ['RUN ID', 'STATUS', 'STEP', 'CONFIG', 'VAL SUCCESS', 'STARTED'],
    ...rows.map((r) => [
      r.runId,
      r.status + (r.paused && r.status === 'RUNNING' ? ' (paused)' : ''),
      `${r.step ?? '-'}/${r.maxSteps ?? '-'}`,
      r.config ?? '-',
      formatNumber(r.valSuccess),
      r.started.replace('T', ' ').slice(0, 19),
    ]),
  ];
  return alignedRows(table);
}

/** Rows of cells as lines, each column padded to its widest cell. */
export function alignedRows(table: readonly string[][]): string[] {
  const widths = table[0].map((_, i) => Math.max(...table.map((cells) => cells[i].length)));
  return table.map((cells) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd(),
  );
}
