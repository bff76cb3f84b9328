/**
 * Many runs on one cluster: `--runs` quickstart-size runs started at once share one Temporal server, one S3
 * server and one worker pool (a control worker, 2 rollout workers, 1 update worker). Each run is first played
 * alone on the same stack; then all together: every run must finish with its solo run's final weights
 * (sha256 of model.safetensors), and the step rates show how fairly the pool serves them. Then the same with
 * one run's env throwing in every episode (test/helpers/poison.ts): that run must fail alone with an
 * EnvFailureError and the others finish, still with their solo weights. Prints a table per phase.
 *
 *   node --import tsx bench/many_runs.ts [--steps 5] [--runs 4] [--config configs/frozen_lake_solver.yaml]
 *
 * The runs differ by learning rate (so their weights differ) and share the config's seed, so they share one
 * warm-up (warmup/<hash>/, made by the first solo run). No validation (eval_steps=0). Starts its own servers
 * on free ports and its worker processes, and stops them at the end. Exit 1 when a check fails.
 */
import { execSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { runInputFromFile } from '../src/cli/run_input';
import type { StarpoRunResult } from '../src/contract';
import { ENV_FAILURE, TASK_QUEUES, WORKFLOW_TYPE } from '../src/contract';
import { checkpointFingerprint } from '../test/helpers/faults';
import { poisonOverrides } from '../test/helpers/poison';
import { startTrainingStack } from '../test/helpers/stack';
import { stepMetrics } from './lib/bench_run';

/** The learning rates of the runs, one each. */
const LEARNING_RATES = ['3.0e-4', '2.0e-4', '1.0e-4', '5.0e-5', '4.0e-4', '1.5e-4'];

/** What one finished (or failed) run shows. */
interface Outcome {
  name: string;
  runId: string;
  /** Final model.safetensors sha256, or the failure (type: message). */
  model: string | null;
  failure: string | null;
  wallSeconds: number;
  loopSeconds: number;
  stepsPerMinute: number;
  historyEvents: number;
}

const load = () => loadavg()[0].toFixed(2);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      steps: { type: 'string', default: '5' },
      runs: { type: 'string', default: '4' },
      config: { type: 'string', default: 'configs/frozen_lake_solver.yaml' },
    },
  });
  const [steps, runs, config] = [Number(values.steps), Number(values.runs), values.config];
  if (!Number.isInteger(steps) || steps < 1) throw new Error(`--steps ${values.steps}: allowed: an integer >= 1`);
  if (!Number.isInteger(runs) || runs < 2 || runs > LEARNING_RATES.length)
    throw new Error(`--runs ${values.runs}: allowed: an integer from 2 to ${LEARNING_RATES.length}`);
  const stamp = `${process.pid}`;
  const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
  const stack = await startTrainingStack(['control', 'rollout', 'rollout', 'update']);
  const { client, store } = stack;
  const overridesOf = (k: number) => [`max_steps=${steps}`, 'eval_steps=0', `actor_train.training_args.learning_rate=${LEARNING_RATES[k]}`];
  const names = Array.from({ length: runs }, (_, k) => `lr${LEARNING_RATES[k]}`);

  /** Starts run `k` (poisoned: every episode's env throws, no warm-up) under `${phase}-${k}`; returns its outcome once closed. */
  const play = async (phase: string, k: number, poisoned = false): Promise<Outcome> => {
    const runId = `many-${stamp}-${phase}-${k}`;
    const overrides = poisoned ? [...overridesOf(k), ...poisonOverrides(config), 'warmup.type=none'] : overridesOf(k);
    const { input } = runInputFromFile(config, runId, overrides);
    const started = Date.now();
    const handle = await client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: runId, args: [input] });
    let model: string | null = null;
    let failure: string | null = null;
    try {
      const result: StarpoRunResult = await handle.result();
      model = (await checkpointFingerprint(store, result.finalCheckpoint)).model;
    } catch (err) {
      if (!(err instanceof WorkflowFailedError)) throw err;
      // The workflow's own failure, or the activity's it carries.
      const cause = err.cause instanceof ActivityFailure ? err.cause.cause : err.cause;
      failure = `${cause instanceof ApplicationFailure ? cause.type : cause?.name}: ${cause?.message.slice(0, 90)}`;
    }
    const wallSeconds = (Date.now() - started) / 1000;
    const metrics = await stepMetrics(store, runId, steps);
    const loopSeconds = metrics.reduce((s, m) => s + (m['time/step'] ?? 0), 0);
    const done = metrics.filter((m) => m['time/step'] !== undefined).length;
    const historyEvents = (await handle.describe()).historyLength;
    log(
      `${runId} (${names[k]}${poisoned ? ', poisoned' : ''}): ${failure ?? `finished, model ${model?.slice(0, 12)}`} after ${wallSeconds.toFixed(0)} s`,
    );
    return {
      name: `${names[k]}${poisoned ? ' (poisoned)' : ''}`,
      runId,
      model,
      failure,
      wallSeconds,
      loopSeconds,
      stepsPerMinute: done > 0 ? (60 * done) / loopSeconds : 0,
      historyEvents,
    };
  };

  let ok = true;
  const check = (pass: boolean, what: string) => {
    console.log(`${pass ? 'ok  ' : 'FAIL'} ${what}`);
    ok &&= pass;
  };
  const table = (title: string, outcomes: Outcome[], solo: Outcome[] | null, loads: string) => {
    console.log('');
    console.log(`${title} (load average (1 min) ${loads})`);
    console.log(
      'run                   run id                     result                  wall s  loop s  steps/min  history events  final model.safetensors sha256',
    );
    for (const o of outcomes) {
      const k = names.findIndex((n) => o.name.startsWith(n));
      const same = solo && o.model ? (o.model === solo[k].model ? ' = solo' : ' DIFFERS from solo') : '';
      const result = o.failure ? o.failure.split(':')[0] : 'finished';
      console.log(
        `${o.name.padEnd(20)}  ${o.runId.padEnd(25)}  ${result.padEnd(22)}  ${o.wallSeconds.toFixed(0).padStart(6)}  ${o.loopSeconds.toFixed(0).padStart(6)}  ${o.stepsPerMinute.toFixed(2).padStart(9)}  ${String(o.historyEvents).padStart(14)}  ${o.model ? `${o.model.slice(0, 16)}${same}` : (o.failure?.slice(0, 100) ?? '')}`,
      );
    }
  };
  const rateRatio = (outcomes: Outcome[]) => {
    const rates = outcomes.filter((o) => !o.failure).map((o) => o.stepsPerMinute);
    return Math.max(...rates) / Math.min(...rates);
  };

  try {
    console.log(
      `${config} max_steps=${steps} eval_steps=0, ${runs} runs (learning rates ${LEARNING_RATES.slice(0, runs).join(', ')}); 1 control, 2 rollout, 1 update worker`,
    );
    console.log(`uptime: ${execSync('uptime').toString().trim()}`);

    let loads = load();
    const solo: Outcome[] = [];
    for (let k = 0; k < runs; k++) solo.push(await play('solo', k));
    loads += ` -> ${load()}`;
    table('alone, one after another (the first makes the shared warm-up)', solo, null, loads);
    console.log(`distinct final weights among the solo runs: ${new Set(solo.map((o) => o.model)).size} of ${runs}`);

    loads = load();
    const together = await Promise.all(names.map((_, k) => play('together', k)));
    loads += ` -> ${load()}`;
    table(`all ${runs} started at once`, together, solo, loads);
    check(
      together.every((o) => !o.failure),
      'all runs finished',
    );
    check(
      together.every((o, k) => o.model === solo[k].model),
      'each run ends with its solo weights',
    );
    check(rateRatio(together) <= 2, `step rates within 2x: max/min ${rateRatio(together).toFixed(2)}`);

    loads = load();
    const poisonedK = runs - 1;
    const withPoison = await Promise.all(names.map((_, k) => play('poison', k, k === poisonedK)));
    loads += ` -> ${load()}`;
    table(`all ${runs} started at once, ${names[poisonedK]} poisoned (every episode's env throws)`, withPoison, solo, loads);
    const healthy = withPoison.filter((_, k) => k !== poisonedK);
    check(withPoison[poisonedK].failure?.startsWith(`${ENV_FAILURE}:`) === true, `the poisoned run failed alone with ${ENV_FAILURE}`);
    check(
      healthy.every((o) => !o.failure && o.model === solo[withPoison.indexOf(o)].model),
      `the other ${healthy.length} finished with their solo weights`,
    );
    check(rateRatio(healthy) <= 2, `step rates of the healthy runs within 2x: max/min ${rateRatio(healthy).toFixed(2)}`);
    console.log(`uptime: ${execSync('uptime').toString().trim()}`);
    if (!ok) process.exitCode = 1;
  } finally {
    await stack.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
