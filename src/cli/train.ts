/**
 * `starpo train <config>` and `starpo resume <runId>`: make sure the servers run, spawn the control,
 * rollout and update workers as separate processes, start (or restart) the workflow and follow it.
 * Ctrl-C stops only the local workers: the run stays durable in Temporal and resumes with
 * `starpo resume <runId>`.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  CancelledFailure,
  Client,
  Connection,
  TerminatedFailure,
  TimeoutFailure,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
} from '@temporalio/client';
import { InfraUnavailableError } from '../../infra/errors';
import { resolveEndpoints } from '../../infra/lifecycle';
import { temporalConnectOptions } from '../../infra/temporal_profile';
import type { InfraEndpoints } from '../../infra/types';
import type { Role, RunConfig, RunSpec, StarpoRunResult } from '../contract';
import { ConfigError, SEARCH_ATTRIBUTE_KEYS, TASK_QUEUES, WORKFLOW_TYPE } from '../contract';
import { type BackendName, defaultBackend, type HostBackends, hostBackends } from '../model/backend_choice';
import { countParams, TINY_PRESET, tinyPreset } from '../model/config';
import { readPretrainedConfig } from '../model/hf/folder';
import { inspectNativeBuild, installCommand, NATIVE_VARIANTS } from '../model/native_build';
import { charTokenizer } from '../model/tokenizer';
import { refuseUnreachableEnvServers } from '../preflight/env_servers';
import { runKey } from '../storage/keys';
import { ObjectStore } from '../storage/object_store';
import { runDetails, runSummary } from '../workflows/run_text';
import { attach } from './attach';
import { BadInputError, RunEndedError } from './exit_codes';
import { describeRun, failureMessage } from './operate';
import { resumePoint } from './resume_point';
import { spawnWorkers, type WorkerExit, type WorkerProcesses } from './spawn_workers';

/** Options shared by train and resume. */
export interface TrainOptions {
  /** Spawn local workers (default true); false when workers run elsewhere. */
  workers: boolean;
  /** Rollout worker processes to spawn (rollout shards run in parallel, one per process). */
  rolloutWorkers: number;
  log: (line: string) => void;
}

/**
 * Temporal client for the endpoints.
 * @throws InfraUnavailableError (exit 3, one line naming the address) when the server does not answer or refuses the credentials
 */
export async function connectClient(e: InfraEndpoints): Promise<Client> {
  let connection: Connection;
  try {
    connection = await Connection.connect(temporalConnectOptions(e));
  } catch (err) {
    // The SDK's message is generic; its cause says what the server answered (e.g. UNAUTHENTICATED).
    const cause = (err as Error).cause;
    const why = (err as Error).message + (cause instanceof Error ? `: ${cause.message}` : '');
    const todo = e.managed
      ? 'start the local servers with `starpo infra up` or set TEMPORAL_ADDRESS'
      : 'check the address, TLS and API key of the profile (--profile, TEMPORAL_CONFIG_FILE) or the TEMPORAL_* variables';
    throw new InfraUnavailableError(`cannot reach the Temporal server at ${e.temporalAddress} (${why}); ${todo}`, { hint: false });
  }
  return new Client({ connection, namespace: e.temporalNamespace });
}

/** The Temporal UI page of a workflow (a run id, or an evaluation's workflow id). */
export function uiLink(e: InfraEndpoints, runId: string): string {
  const base = e.temporalUiUrl ?? 'http://127.0.0.1:8233';
  return `${base}/namespaces/${e.temporalNamespace}/workflows/${encodeURIComponent(runId)}`;
}

/** Parameters of a run's policy: the tiny preset's, or those of the HF folder's config.json. */
function policyParams(config: RunConfig): number {
  return countParams(
    config.pretrain === TINY_PRESET
      ? tinyPreset(charTokenizer().vocabSize, config.config_overrides)
      : readPretrainedConfig(config.pretrain),
  );
}

/**
 * The backend of each compute role for a run of `config` on `host`, knowing its model's size
 * (backend_choice.ts defaultBackend); none when STARPO_BACKEND (or `--backend`) names one for all, or
 * when the config is not known (the workers pick their own).
 */
export function roleBackends(
  config: RunConfig | null,
  host: HostBackends = hostBackends(),
  env: NodeJS.ProcessEnv = process.env,
): Partial<Record<Role, BackendName>> {
  if (env.STARPO_BACKEND || !config) return {};
  const params = policyParams(config);
  return { rollout: defaultBackend('rollout', host, params), update: defaultBackend('update', host, params) };
}

/**
 * The native builds in the cache that are there but unusable (a wrong size, a bad manifest): the workers'
 * defaults pass over them to wasm, which the user should hear about.
 */
function brokenBuilds(): string[] {
  return NATIVE_VARIANTS.flatMap((v) => {
    const build = inspectNativeBuild(v);
    return build.state === 'broken'
      ? [
          `the native ${v.backend} build is unusable (${build.problem}); the workers use another backend; repair it with ${installCommand(v)}`,
        ]
      : [];
  });
}

/** The error `train` ends with when one of its workers exited by itself: which, how, and its log's last lines. */
function workerExitError(runId: string, exit: WorkerExit): Error {
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  let tail = '';
  try {
    tail = readFileSync(exit.log, 'utf8')
      .trimEnd()
      .split('\n')
      .slice(-5)
      .map((l) => `  ${l}`)
      .join('\n');
  } catch {
    tail = '  (no log)';
  }
  return new Error(
    `the ${exit.role} worker ${how}; the end of ${exit.log}:\n${tail}\nthe run stays durable; continue it with:  starpo resume ${runId}`,
  );
}

/**
 * Spawns the local workers (unless opts.workers is false), runs `watch` until it settles, then stops them.
 * Ctrl-C stops only the workers: the run or sweep `id` stays durable in Temporal. A worker that exits by
 * itself ends the watch with an error naming it and its log.
 */
export async function withWorkers<T>(
  e: InfraEndpoints,
  id: string,
  config: RunConfig | null,
  opts: TrainOptions,
  watch: () => Promise<T>,
): Promise<T> {
  let workers: WorkerProcesses | null = null;
  if (opts.workers) {
    const logDir = resolve('.starpo', 'logs', id);
    const roles: Role[] = ['control', ...Array<Role>(opts.rolloutWorkers).fill('rollout'), 'update'];
    const backends = roleBackends(config);
    for (const problem of brokenBuilds()) opts.log(`warning: ${problem}`);
    workers = spawnWorkers(roles, e, logDir, backends);
    const on = process.env.STARPO_BACKEND
      ? `; every worker on ${process.env.STARPO_BACKEND}`
      : Object.keys(backends).length > 0
        ? `; rollout on ${backends.rollout}, update on ${backends.update}`
        : '';
    opts.log(`workers: ${roles.join(', ')} (logs in ${logDir}${on})`);
  }
  // A worker that exits by itself (e.g. a backend it cannot load) would leave the run waiting for it.
  const died = workers
    ? workers.died.then((exit) => {
        throw workerExitError(id, exit);
      })
    : new Promise<never>(() => undefined);
  const onSigint = () => {
    opts.log(`\nstopping local workers; ${id} stays durable in Temporal.`);
    opts.log(`continue it with:  starpo resume ${id}`);
    void (workers?.stop(30) ?? Promise.resolve()).then(() => process.exit(130));
  };
  process.once('SIGINT', onSigint);
  try {
    return await Promise.race([watch(), died]);
  } finally {
    process.removeListener('SIGINT', onSigint);
    await workers?.stop();
  }
}

/**
 * The one error a run that closed without completing ends `train`/`resume` with (exit 1): how it closed
 * (terminated, timed out, cancelled, failed) with the reason, and how to continue it.
 */
function runEndedError(runId: string, err: WorkflowFailedError): RunEndedError {
  const cause = err.cause;
  const how =
    cause instanceof TerminatedFailure
      ? 'was terminated'
      : cause instanceof TimeoutFailure
        ? 'timed out'
        : cause instanceof CancelledFailure
          ? 'was cancelled'
          : 'failed';
  const why = failureMessage(err);
  return new RunEndedError(
    `run ${runId} ${how}${why ? ` (${why})` : ''}; continue it from its latest checkpoint with:  starpo resume ${runId}`,
  );
}

/** Minutes (or seconds, under two minutes) for the end-of-run summary. */
function elapsedText(ms: number): string {
  const s = ms / 1000;
  return s < 120 ? `${s.toFixed(0)} s` : `${(s / 60).toFixed(1)} min`;
}

/**
 * Spawns workers, follows the run, stops the workers; Ctrl-C leaves the run durable. At the end: the
 * time since the command started, the validation curve, and what to do next (the report; the local
 * servers keep running for the UI until `infra down`).
 */
async function follow(
  client: Client,
  e: InfraEndpoints,
  runId: string,
  config: RunConfig | null,
  opts: TrainOptions & { startedAt: number },
): Promise<void> {
  await withWorkers(e, runId, config, opts, async () => {
    try {
      const result = await attach(client, runId, opts.log);
      opts.log(
        `run ${runId} finished: ${result.steps} steps, ${elapsedText(Date.now() - opts.startedAt)} for this command; final checkpoint ${result.finalCheckpoint.key}`,
      );
      if (result.stoppedBy) opts.log(`stopped early by ${result.stoppedBy}`);
      if (result.validationCurve.length > 0) {
        opts.log(`validation success by step: ${result.validationCurve.map((v) => `${v.step}: ${v.success.toFixed(3)}`).join(', ')}`);
      }
      const val = result.lastValidation;
      if (val) {
        const parts = Object.entries(val.metrics)
          .filter(([k]) => k.endsWith('/success'))
          .map(([k, v]) => `${k} ${v.toFixed(3)}`);
        opts.log(`validation at step ${val.step}: ${parts.join(', ')}`);
      }
      // Steps count updates: a bar that ends at N played steps 0..N-1; step N is the final checkpoint only.
      if (result.steps > 0)
        opts.log(
          `steps 0-${result.steps - 1} hold the rollouts (npx starpo trajectories ${runId} --step ${result.steps - 1}); checkpoint step ${result.steps} is the final policy`,
        );
      opts.log(`next: npx starpo report ${runId}   (one HTML file: curves, validation, trajectories)`);
      if (e.managed)
        opts.log(
          `the local servers keep running, so the run stays in the Temporal UI (${uiLink(e, runId)}); stop them with: npx starpo infra down`,
        );
    } catch (err) {
      if (err instanceof WorkflowFailedError) throw runEndedError(runId, err);
      throw err;
    }
  });
}

/**
 * A run id names a workflow and a folder of the store; starting a second run under it would
 * overwrite the first one's objects.
 * @throws ConfigError (exit 2) when the workflow id or runs/<runId>/run.json already exists
 */
export async function refuseExistingRun(client: Client, store: ObjectStore, runId: string): Promise<void> {
  let exists = await store.exists(runKey(runId));
  try {
    await client.workflow.getHandle(runId).describe();
    exists = true;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  if (exists) throw runIdTaken(runId);
}

function runIdTaken(runId: string): ConfigError {
  return new ConfigError('--run-id', [
    `run ${JSON.stringify(runId)} already exists; continue it with \`starpo resume ${runId}\` or pick another --run-id`,
  ]);
}

/**
 * Starts workflow starpoTraining for a run: workflow id = run id, search attributes, a summary and
 * details (run_metadata.ts) for the Temporal UI. `REJECT_DUPLICATE` for new runs, `ALLOW_DUPLICATE` to restart a closed one.
 */
async function startWorkflow(client: Client, input: RunSpec, reuse: 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE'): Promise<void> {
  await client.workflow.start(WORKFLOW_TYPE, {
    taskQueue: TASK_QUEUES.control,
    workflowId: input.runId,
    args: [input],
    workflowIdReusePolicy: reuse,
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTE_KEYS.runId, value: input.runId },
      { key: SEARCH_ATTRIBUTE_KEYS.config, value: input.configName },
    ],
    staticSummary: runSummary(input),
    staticDetails: runDetails(input),
  });
}

/** Starts a new run from a workflow input and follows it. */
export async function train(input: RunSpec, opts: TrainOptions): Promise<void> {
  const startedAt = Date.now();
  await refuseUnreachableEnvServers(input.config);
  const e = await resolveEndpoints({ start: true, log: opts.log });
  const client = await connectClient(e);
  await refuseExistingRun(client, new ObjectStore(e.s3), input.runId);
  // Another `starpo train` of the same run id may have started between the check and here.
  await startWorkflow(client, input, 'REJECT_DUPLICATE').catch((err: unknown) => {
    throw err instanceof WorkflowExecutionAlreadyStartedError ? runIdTaken(input.runId) : err;
  });
  opts.log(`run id: ${input.runId}`);
  opts.log(`Temporal UI: ${uiLink(e, input.runId)}`);
  await follow(client, e, input.runId, input.config, { ...opts, startedAt });
}

/**
 * Continues a run. A running workflow just gets workers again; a closed one (failed, terminated,
 * cancelled, timed out, or completed early by `stop` / collapse_guard) is started anew with the same
 * workflow id from runs/<runId>/latest.json. The servers must be up (`starpo resume` starts them).
 * @throws WorkflowNotFoundError (exit 2) for an unknown run id; BadInputError (exit 2) when the run
 *   completed all its steps; Error when it has no complete checkpoint
 */
export async function resume(runId: string, opts: TrainOptions): Promise<void> {
  const startedAt = Date.now();
  // The caller has started the servers: it had to, to learn whether the id is a run or a sweep.
  const e = await resolveEndpoints({ start: false });
  const client = await connectClient(e);
  const handle = client.workflow.getHandle(runId);
  const status = (await describeRun(handle, runId)).status.name;
  const store = new ObjectStore(e.s3);
  // A run that is still preparing may not have stored its run.json yet; its workers then pick their own backends.
  const spec = (await store.exists(runKey(runId))) ? await store.getJson<RunSpec>(runKey(runId)) : null;
  if (status !== 'RUNNING') {
    if (!spec) throw new Error(`run ${runId} has no run.json in the object store; start it again with starpo train`);
    if (status === 'COMPLETED') {
      const done: StarpoRunResult = await handle.result();
      if (!done.stoppedBy || done.steps >= spec.config.max_steps)
        throw new BadInputError(`run ${runId} already completed ${done.steps} steps; nothing to resume`);
    }
    const latest = await resumePoint(store, runId, opts.log);
    if (!latest) throw new Error(`run ${runId} has no complete checkpoint in the object store; start it again with starpo train`);
    const input: RunSpec = { runId, configName: spec.configName, config: spec.config, resumeFrom: latest };
    try {
      await startWorkflow(client, input, 'ALLOW_DUPLICATE');
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    opts.log(`run ${runId} was ${status.toLowerCase()}; continuing from step ${latest.step} (${latest.checkpoint.key})`);
  } else opts.log(`run ${runId} is running; attaching workers`);
  opts.log(`Temporal UI: ${uiLink(e, runId)}`);
  await follow(client, e, runId, spec?.config ?? null, { ...opts, startedAt });
}
