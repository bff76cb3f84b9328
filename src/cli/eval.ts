/**
 * `starpo eval <runId|checkpoint> [--step N] [--config FILE] [--episodes N] [--json]`: validation
 * only, for one checkpoint of a run, as workflow starpoEvaluation (task queue "starpo", visible in the
 * Temporal UI) whose rollouts run on the same rollout activities and workers as training validation.
 * The result is stored at runs/<run>/evals/<name>/result.json; the run's training rollouts and
 * metrics are not touched.
 */
import { resolve } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { Presets, SingleBar } from 'cli-progress';
import { resolveEndpoints } from '../../infra/lifecycle';
import type { EvalResult, Role } from '../contract';
import { EVAL_WORKFLOW_TYPE, evalProgressQuery, evalWorkflowId, SEARCH_ATTRIBUTE_KEYS, TASK_QUEUES } from '../contract';
import { loadConfigFile } from '../preflight/load';
import { planShards } from '../rollout/plan';
import { evalResultKey } from '../storage/keys';
import { ObjectStore } from '../storage/object_store';
import { formatNumber } from '../workflows/format';
import { heartbeatDetails } from './attach';
import { type EvalArgs, type EvalTarget, parseTarget, resolveEvalTarget } from './eval_target';
import { evalDetails, evalSummary, valStates } from './run_metadata';
import { spawnWorkers } from './spawn_workers';
import { connectClient, uiLink } from './train';

/** Options of `starpo eval` besides the target. */
export interface EvalOptions {
  /** Spawn a control worker and rollout workers (default true); false when workers run elsewhere. */
  workers: boolean;
  /** Rollout worker processes to spawn (shards run in parallel). */
  rolloutWorkers: number;
  /** Informational lines (stderr with --json). */
  log: (line: string) => void;
}

/** What `starpo eval --json` prints: the result, where it is stored and the workflow id. */
export interface EvalOutput extends EvalResult {
  resultKey: string;
  workflowId: string;
}

/** The heartbeat details of a running rollout activity (activities/rollout.ts: after each env reset and each turn). */
interface RolloutHeartbeat {
  /** Lockstep turn just played (0-based); -1 while the envs are being reset. */
  turn: number;
  /** Episodes that played that turn (envs reset so far, at turn -1). */
  active: number;
}

/**
 * What the running shard rollouts are doing, from their heartbeats: "shard rollouts starting" before
 * any heartbeat, else per shard "resetting envs (K)" or "turn T: K episodes playing". The rollout
 * heartbeats count the episodes still playing, not those done, so the bar counts shards and this text
 * shows movement inside a shard.
 */
export function rolloutActivityText(heartbeats: ReadonlyArray<Partial<RolloutHeartbeat>>): string {
  const known = heartbeats.filter((h): h is RolloutHeartbeat => typeof h.turn === 'number' && typeof h.active === 'number');
  if (known.length === 0) return 'shard rollouts starting';
  return known.map((h) => (h.turn < 0 ? `resetting envs (${h.active})` : `turn ${h.turn + 1}: ${h.active} episodes playing`)).join(', ');
}

/**
 * Shows a progress bar of the evaluation (on stderr) until it closes, then returns its result: shards
 * done of all shards, and what the running shards are doing (rolloutActivityText).
 * @param plan the shards (planShards of its config) and episodes the evaluation plays, shown from the start:
 *   the workflow knows them only once eval.json is written
 */
async function follow(handle: WorkflowHandle, plan: { shards: number; episodes: number }, pollSeconds = 1): Promise<EvalResult> {
  const bar = new SingleBar(
    {
      format: 'eval step {step} [{bar}] {value}/{total} shards done | {phase} | {episodes} episodes | {inFlight}',
      hideCursor: false,
      noTTYOutput: true,
      notTTYSchedule: 10_000,
    },
    Presets.shades_classic,
  );
  let started = false;
  let finished = false;
  const result = handle.result().finally(() => {
    finished = true;
  });
  for (;;) {
    const last = finished; // one more query once closed, so the bar ends at the final state
    try {
      const p = await handle.query(evalProgressQuery);
      const inFlight =
        p.phase === 'validation'
          ? rolloutActivityText(heartbeatDetails<Partial<RolloutHeartbeat>>(await handle.describe(), 'rollout'))
          : '-';
      const payload = { step: p.step, phase: p.phase, episodes: p.episodes || plan.episodes, inFlight };
      const total = p.shards || plan.shards;
      if (!started) bar.start(total, p.shardsDone, payload);
      else bar.setTotal(total);
      bar.update(p.shardsDone, payload);
      started = true;
    } catch {
      // no control worker has answered the query yet (starting up); keep waiting
    }
    if (last) break;
    await Promise.race([result.catch(() => undefined), new Promise((r) => setTimeout(r, pollSeconds * 1000))]);
  }
  if (started) bar.stop();
  return result;
}

/** Starts (or, when the same evaluation is running, joins) the evaluation workflow. */
function startEvaluation(client: Client, t: EvalTarget): Promise<WorkflowHandle> {
  const { request } = t;
  return client.workflow.start(EVAL_WORKFLOW_TYPE, {
    taskQueue: TASK_QUEUES.control,
    workflowId: evalWorkflowId(request.runId, request.name),
    args: [request],
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTE_KEYS.runId, value: request.runId },
      { key: SEARCH_ATTRIBUTE_KEYS.config, value: t.configName },
    ],
    staticSummary: evalSummary(request, t.config, t.configName),
    staticDetails: evalDetails(request, t.config, t.configName),
  });
}

/**
 * Runs an evaluation and returns its result with where it is stored. Starts the servers when needed and
 * spawns a control worker and the rollout workers (unless `--no-workers`); a progress bar (follow) shows
 * shards done, and the running shards' turn and episodes playing from their heartbeats.
 * @throws BadInputError / ConfigError (exit 2) for bad arguments (eval_target.ts); WorkflowFailedError
 *   (exit 1) when the evaluation fails; InfraUnavailableError (exit 3) when the servers cannot start
 */
export async function evaluate(args: EvalArgs, opts: EvalOptions): Promise<EvalOutput> {
  parseTarget(args); // a malformed target exits 2 before any server starts
  if (args.config !== undefined) loadConfigFile(args.config); // so does a bad --config
  const e = await resolveEndpoints({ start: true, log: opts.log });
  const target = await resolveEvalTarget(new ObjectStore(e.s3), args, opts.log);
  const { request } = target;
  const workflowId = evalWorkflowId(request.runId, request.name);
  const client = await connectClient(e);
  const logDir = resolve('.starpo', 'logs', request.runId, `eval-${request.name}`);
  const roles: Role[] = ['control', ...Array<Role>(opts.rolloutWorkers).fill('rollout')];
  const workers = opts.workers ? spawnWorkers(roles, e, logDir) : null;
  if (workers) opts.log(`workers: ${roles.join(', ')} (logs in ${logDir})`);
  try {
    opts.log(`eval of run ${request.runId}, checkpoint step ${request.step} (${request.checkpoint.key})`);
    const v = target.config.val_env_manager;
    opts.log(
      `validation settings of ${target.configName}: ${target.config.val_batch_size} episodes = ${target.config.val_batch_size / v.group_size} groups x group_size ${v.group_size}, ${valStates(target.config, request.step)}`,
    );
    opts.log(`Temporal UI: ${uiLink(e, workflowId)}`);
    const plan = { shards: planShards(target.config, 'val', request.step).length, episodes: target.config.val_batch_size };
    const result = await follow(await startEvaluation(client, target), plan);
    return { ...result, resultKey: evalResultKey(request.runId, request.name), workflowId };
  } finally {
    await workers?.stop();
    await client.connection.close();
  }
}

/** The result as a table: one row per tag (episodes, val success, val score) and the overall row. */
export function formatEval(out: EvalOutput): string[] {
  const rows = [
    ['TAG', 'EPISODES', 'SUCCESS', 'SCORE'],
    ...Object.entries(out.tags).map(([tag, r]) => [tag, String(r.episodes), formatNumber(r.success), formatNumber(r.score, 4)]),
    ['all', String(out.episodes), formatNumber(out.metrics['val/env/success']), formatNumber(out.metrics['val/score'], 4)],
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return [
    ...rows.map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    ),
    `stored: ${out.resultKey}`,
  ];
}
