/**
 * `starpo sweep <config>` and `starpo resume <sweepId>`: start (or restart) workflow starpoSweep with the
 * local workers and follow it, a line per child as it starts and ends, then a table of every child.
 * Ctrl-C stops only the local workers; the sweep and its children stay durable in Temporal.
 */
import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  type WorkflowHandle,
  WorkflowNotFoundError,
} from '@temporalio/client';
import { resolveEndpoints } from '../../infra/lifecycle';
import {
  ConfigError,
  type StarpoRunResult,
  SWEEP_WORKFLOW_TYPE,
  type SweepChild,
  type SweepChildOutcome,
  type SweepInput,
  type SweepProgress,
  type SweepResult,
  type SweepSpec,
  sweepProgressQuery,
  TASK_QUEUES,
} from '../contract';
import { refuseUnreachableEnvServers } from '../preflight/env_servers';
import { pointText } from '../report/sweep_data';
import { sweepKey } from '../storage/keys';
import { ObjectStore } from '../storage/object_store';
import { progressText } from './attach';
import { BadInputError } from './exit_codes';
import { loadSweepSpec } from './known_run';
import { resumePoint } from './resume_point';
import { sweepShape } from './sweep_spec';
import { formatSweepTable, sweepRows } from './sweep_status';
import { connectClient, refuseExistingRun, type TrainOptions, uiLink, withWorkers } from './train';

/** Seconds between two looks at a sweep's progress while following it. */
const POLL_SECONDS = 2;
/** Seconds between the progress lines of the running runs. */
const PROGRESS_SECONDS = 10;

/** Starts a new sweep and follows it. @throws ConfigError (exit 2) when the sweep id or a child's run id is taken */
export async function sweep(spec: SweepSpec, opts: TrainOptions): Promise<SweepResult> {
  for (const c of spec.children) await refuseUnreachableEnvServers(c.run.config);
  const e = await resolveEndpoints({ start: true, log: opts.log });
  const client = await connectClient(e);
  const store = new ObjectStore(e.s3);
  if (await store.exists(sweepKey(spec.sweepId))) throw sweepIdTaken(spec.sweepId);
  await refuseExistingRun(client, store, spec.sweepId).catch((err: unknown) => {
    throw err instanceof ConfigError ? sweepIdTaken(spec.sweepId) : err;
  });
  for (const c of spec.children) await refuseExistingRun(client, store, c.run.runId);
  await startSweep(client, spec, 'REJECT_DUPLICATE').catch((err: unknown) => {
    throw err instanceof WorkflowExecutionAlreadyStartedError ? sweepIdTaken(spec.sweepId) : err;
  });
  opts.log(`sweep id: ${spec.sweepId}: ${sweepShape(spec)}, ${spec.parallel} at a time`);
  opts.log(`Temporal UI: ${uiLink(e, spec.sweepId)}`);
  return withWorkers(e, spec.sweepId, spec.children[0].run.config, opts, () => followSweep(client, spec, opts.log));
}

function sweepIdTaken(sweepId: string): ConfigError {
  return new ConfigError('--sweep-id', [
    `sweep ${JSON.stringify(sweepId)} already exists; continue it with \`starpo resume ${sweepId}\` or pick another --sweep-id`,
  ]);
}

/** Starts workflow starpoSweep (workflow id = sweep id); `ALLOW_DUPLICATE` restarts a closed one. */
async function startSweep(client: Client, input: SweepInput, reuse: 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE'): Promise<void> {
  await client.workflow.start(SWEEP_WORKFLOW_TYPE, {
    taskQueue: TASK_QUEUES.control,
    workflowId: input.sweepId,
    args: [input],
    workflowIdReusePolicy: reuse,
    staticSummary: `StarPO sweep ${input.configName}: ${sweepShape(input)}`,
    staticDetails: [
      `**Sweep \`${input.sweepId}\`** of config \`${input.configName}\`${input.overrides.length > 0 ? ` with ${input.overrides.map((o) => `\`${o}\``).join(' ')}` : ''}`,
      '',
      `- seeds: ${input.seeds.join(', ')}; at most ${input.parallel} runs at a time`,
      ...input.points.map((p, i) => `- grid point ${i}: ${pointText(p)}`),
      '',
      `\`starpo status ${input.sweepId}\`, \`starpo report ${input.sweepId}\`, \`starpo pause|unpause|stop ${input.sweepId}\`, \`starpo resume ${input.sweepId}\``,
    ].join('\n'),
  });
}

/**
 * Continues a sweep. A running one just gets workers; a closed one (failed, terminated, or stopped) is
 * started again from sweeps/<id>/sweep.json: children that completed (all their steps, or ended by an early
 * stop or collapse_guard) are kept, the others continue from their latest complete checkpoint (or start over
 * without one); a child still running without its sweep is terminated first, as a sweep cannot adopt it.
 * The servers must be up (`starpo resume` starts them).
 * @throws BadInputError (exit 2) when every child already completed
 */
export async function resumeSweep(sweepId: string, opts: TrainOptions): Promise<SweepResult> {
  const e = await resolveEndpoints({ start: false });
  const client = await connectClient(e);
  const store = new ObjectStore(e.s3);
  const spec = await loadSweepSpec(store, sweepId);
  const handle = client.workflow.getHandle(sweepId);
  // A sweep whose history Temporal no longer keeps is closed; its sweep.json says what to continue.
  const status = await handle.describe().then(
    (d) => d.status.name,
    (err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return 'NOT FOUND';
      throw err;
    },
  );
  if (status !== 'RUNNING') {
    const finished: SweepChildOutcome[] = [];
    const children: SweepChild[] = [];
    for (const child of spec.children) {
      const done = await completedChild(client, child, opts.log);
      if (done === 'not started') children.push(child);
      else if (done) finished.push(done);
      else {
        const resumeFrom = await resumePoint(store, child.run.runId, opts.log);
        children.push(resumeFrom ? { ...child, run: { ...child.run, resumeFrom } } : child);
      }
    }
    if (finished.length === spec.children.length)
      throw new BadInputError(`sweep ${sweepId}: every run already completed; nothing to resume`);
    const byId = new Map(children.map((c) => [c.run.runId, c]));
    await startSweep(client, { ...spec, children: spec.children.map((c) => byId.get(c.run.runId) ?? c), finished }, 'ALLOW_DUPLICATE');
    opts.log(`sweep ${sweepId} was ${status.toLowerCase()}; ${finished.length} runs completed, ${children.length} to continue`);
  } else opts.log(`sweep ${sweepId} is running; attaching workers`);
  opts.log(`Temporal UI: ${uiLink(e, sweepId)}`);
  return withWorkers(e, sweepId, spec.children[0].run.config, opts, () => followSweep(client, spec, opts.log));
}

/**
 * The child's outcome when it completed all its steps; null when it must continue; 'not started'. Terminates
 * a child left running.
 */
async function completedChild(
  client: Client,
  child: SweepChild,
  log: (line: string) => void,
): Promise<SweepChildOutcome | null | 'not started'> {
  const id = child.run.runId;
  const handle = client.workflow.getHandle(id);
  let status: string;
  try {
    status = (await handle.describe()).status.name;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'not started';
    throw err;
  }
  if (status === 'RUNNING') {
    await handle.terminate('its sweep was resumed; it continues from its latest checkpoint');
    log(`run ${id} was running without its sweep; terminated, to continue from its latest checkpoint`);
    return null;
  }
  if (status !== 'COMPLETED') return null;
  const result: StarpoRunResult = await handle.result();
  // A run stopped by a request (`stop`, the sweep's stop) continues; one that an early stop or collapse_guard
  // ended has its outcome, as the sweep recorded it.
  const requested = result.stoppedBy !== null && /^stop(: | requested$)/.test(result.stoppedBy);
  return requested && result.steps < child.run.config.max_steps ? null : { runId: id, state: 'completed', result };
}

/** Prints each child's state changes until the sweep closes, then the table of children; returns the result. */
async function followSweep(client: Client, spec: SweepSpec, log: (line: string) => void): Promise<SweepResult> {
  const handle: WorkflowHandle = client.workflow.getHandle(spec.sweepId);
  const seen = new Map<string, string>();
  const report = (children: SweepProgress['children']) => {
    for (const c of children) {
      const before = seen.get(c.runId);
      seen.set(c.runId, c.state);
      if (before === c.state || (before === undefined && c.state === 'waiting')) continue;
      log(`${c.runId} (${pointText(spec.points[c.point])}, seed ${c.seed}): ${c.state}${c.failure ? `: ${c.failure}` : ''}`);
    }
  };
  const result = handle.result() as Promise<SweepResult>;
  let closed = false;
  void result.then(
    () => (closed = true),
    () => (closed = true),
  );
  let printedAt = Date.now();
  while (!closed) {
    const p = await handle.query(sweepProgressQuery).catch(() => null);
    if (p) report(p.children);
    // State changes are rare (a run takes minutes): a line per running run every PROGRESS_SECONDS, as train's bar prints.
    if (p && Date.now() - printedAt >= PROGRESS_SECONDS * 1000) {
      printedAt = Date.now();
      for (const c of p.children.filter((c) => c.state === 'running'))
        log(`${c.runId}: ${await progressText(client.workflow.getHandle(c.runId))}`);
    }
    await Promise.race([result.catch(() => undefined), new Promise((r) => setTimeout(r, POLL_SECONDS * 1000))]);
  }
  try {
    const done = await result;
    // What ended after the last look.
    const child = new Map(spec.children.map((c) => [c.run.runId, c]));
    report(
      done.children.map((o) => ({
        runId: o.runId,
        point: child.get(o.runId)!.point,
        seed: child.get(o.runId)!.seed,
        state: o.state,
        failure: o.failure,
      })),
    );
    for (const line of formatSweepTable(spec, await sweepRows(client, spec))) log(line);
    if (done.stoppedBy) log(`stopped early by ${done.stoppedBy}; continue it with:  starpo resume ${spec.sweepId}`);
    const failed = done.children.filter((c) => c.state === 'failed');
    if (failed.length > 0) log(`${failed.length} runs failed; continue them with:  starpo resume ${spec.sweepId}`);
    return done;
  } catch (err) {
    if (err instanceof WorkflowFailedError)
      log(`sweep ${spec.sweepId} did not complete: ${err.cause?.message ?? err.message}; continue it with:  starpo resume ${spec.sweepId}`);
    throw err;
  }
}
