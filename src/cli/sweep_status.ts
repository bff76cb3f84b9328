/**
 * `starpo status | pause | unpause | stop` of a sweep: its `sweepProgress` query, its updates, and a table
 * of its children (each child's Temporal status and search attributes: steps done, last validation success).
 */
import { type Client, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import {
  SEARCH_ATTRIBUTE_KEYS,
  SWEEP_WORKFLOW_TYPE,
  type SweepControlReply,
  type SweepProgress,
  type SweepSpec,
  sweepPauseUpdate,
  sweepProgressQuery,
  sweepStopUpdate,
  sweepUnpauseUpdate,
} from '../contract';
import { pointText } from '../report/sweep_data';
import type { ObjectStore } from '../storage/object_store';
import { formatNumber } from '../workflows/format';
import { BadInputError, NoControlWorkerError } from './exit_codes';
import { isStoredSweep, loadSweepSpec } from './known_run';
import { alignedRows, describeRun } from './operate';
import { sweepShape } from './sweep_spec';

/** One child of a sweep as Temporal sees it. */
export interface SweepRow {
  runId: string;
  point: number;
  seed: number;
  /** The child workflow's status, or 'NOT STARTED'. */
  status: string;
  step: number | null;
  maxSteps: number;
  valSuccess: number | null;
}

/** Every child's row, in the spec's order. */
export async function sweepRows(client: Client, spec: SweepSpec): Promise<SweepRow[]> {
  return Promise.all(
    spec.children.map(async (c): Promise<SweepRow> => {
      const row = { runId: c.run.runId, point: c.point, seed: c.seed, maxSteps: c.run.config.max_steps };
      try {
        const d = await client.workflow.getHandle(c.run.runId).describe();
        const a = d.typedSearchAttributes;
        return {
          ...row,
          status: d.status.name,
          step: a.get(SEARCH_ATTRIBUTE_KEYS.step) ?? null,
          valSuccess: a.get(SEARCH_ATTRIBUTE_KEYS.valSuccess) ?? null,
        };
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        return { ...row, status: 'NOT STARTED', step: null, valSuccess: null };
      }
    }),
  );
}

/** The children as an aligned table: run id, grid point, seed, status, steps, last validation success. */
export function formatSweepTable(spec: SweepSpec, rows: SweepRow[]): string[] {
  const table = [
    ['RUN ID', 'GRID POINT', 'SEED', 'STATUS', 'STEP', 'VAL SUCCESS'],
    ...rows.map((r) => [
      r.runId,
      pointText(spec.points[r.point]),
      String(r.seed),
      r.status,
      `${r.step ?? '-'}/${r.maxSteps}`,
      formatNumber(r.valSuccess),
    ]),
  ];
  return alignedRows(table);
}

/**
 * Whether an id names a sweep (the CLI's run commands route sweeps here): its workflow's type, or, when Temporal
 * no longer keeps the workflow, a sweeps/<id>/sweep.json in the store.
 */
export async function isSweep(client: Client, store: ObjectStore, id: string): Promise<boolean> {
  try {
    return (await client.workflow.getHandle(id).describe()).type === SWEEP_WORKFLOW_TYPE;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return isStoredSweep(store, id);
    throw err;
  }
}

/** `starpo status <sweepId>`: the sweep's state and its children's table. */
export async function sweepStatus(client: Client, store: ObjectStore, sweepId: string): Promise<string[]> {
  const handle = client.workflow.getHandle(sweepId);
  const status = (await describeRun(handle, sweepId)).status.name;
  const spec = await loadSweepSpec(store, sweepId);
  const progress: SweepProgress | null = status === 'RUNNING' ? await handle.query(sweepProgressQuery).catch(() => null) : null;
  const flags = progress
    ? [progress.paused ? 'paused' : '', progress.stopRequested ? `stopping (${progress.stopRequested})` : ''].filter(Boolean)
    : [];
  return [
    `sweep ${sweepId} · ${status}${flags.length > 0 ? ` (${flags.join(', ')})` : ''} · config ${spec.configName} · ${sweepShape(spec)}, ${spec.parallel} at a time`,
    ...formatSweepTable(spec, await sweepRows(client, spec)),
  ];
}

/** Seconds a query waits for a control worker before the CLI reports that none answered. */
const QUERY_SECONDS = 5;

const CONTROLS = { pause: sweepPauseUpdate, unpause: sweepUnpauseUpdate, stop: sweepStopUpdate } as const;

/**
 * Sends `pause`, `unpause` or `stop` to a running sweep; it passes them on to its running children.
 * @throws BadInputError (exit 2) for a closed sweep or a rejected request
 */
export async function sendSweepControl(client: Client, sweepId: string, action: keyof typeof CONTROLS, reason?: string): Promise<string> {
  const handle = client.workflow.getHandle(sweepId);
  const status = (await describeRun(handle, sweepId)).status.name;
  if (status !== 'RUNNING') throw new BadInputError(`sweep ${sweepId} is ${status.toLowerCase()}; nothing to ${action}`);
  // An update waits for a control worker; check that one answers instead of hanging.
  const deadline = Date.now() + QUERY_SECONDS * 1000;
  await client.connection
    .withDeadline(deadline, () => handle.query(sweepProgressQuery))
    .catch((err: unknown) => {
      if (Date.now() < deadline) throw err;
      throw new NoControlWorkerError(
        `no control worker answered within ${QUERY_SECONDS} s; start one (starpo resume ${sweepId}, or starpo worker --role control) and try again`,
      );
    });
  let reply: SweepControlReply;
  try {
    reply =
      action === 'stop'
        ? await handle.executeUpdate(sweepStopUpdate, { args: [reason ?? ''] })
        : await handle.executeUpdate(CONTROLS[action]);
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) throw new BadInputError(`${action} rejected: ${err.cause?.message ?? err.message}`);
    throw err;
  }
  const runs = reply.running.length > 0 ? reply.running.join(', ') : 'none';
  if (action === 'pause')
    return `sweep ${sweepId} paused: no run starts; running runs pause after their step in flight (${runs}); ${reply.waiting} waiting`;
  if (action === 'unpause') return `sweep ${sweepId} continues: running runs continue (${runs}); ${reply.waiting} waiting`;
  return `sweep ${sweepId} stops: no run starts; running runs stop after their step in flight (${runs}); continue it later with: starpo resume ${sweepId}`;
}
