/**
 * Held-out success against wall-clock training time for one config, trained through Temporal exactly as
 * `starpo train` does; prints per step the minutes so far, train and held-out success, and the gain of RL
 * over the warm start.
 *
 *   npx tsx bench/learning_curve.ts <config.yaml> [--budget-minutes 30] [key=value ...]
 */
import { cpus, loadavg } from 'node:os';
import { sendControl } from '../src/cli/operate';
import { runInputFromFile } from '../src/cli/run_input';
import { connectClient, train } from '../src/cli/train';
import { metricsKey } from '../src/storage/keys';
import { ObjectStore } from '../src/storage/object_store';
import { stepMetrics, useBenchNamespace } from './lib/bench_run';

/**
 * Local servers, a control worker, one rollout worker per core and an update worker (namespace starpo-bench,
 * see lib/bench_run.ts). Minutes of training = the warm-up's `warmup/seconds` plus the sum of `time/step`,
 * validations included. The summary: held-out success after the warm start (the step-0 validation), at the
 * last validation within the budget, and the gain of RL over the warm start. When the budget's wall time has
 * passed since the run started, the bench sends the run `starpo stop` (the workflow's `stop` update): the step
 * in flight finishes and the final validation runs. A warm-up stored by an earlier run with the same settings
 * (warmup/<hash>/) is reused and its time is not counted; the summary says so. The load average is printed:
 * other processes slow the run.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const budgetAt = args.indexOf('--budget-minutes');
  const budget = budgetAt >= 0 ? Number(args.splice(budgetAt, 2)[1]) : 30;
  const config = args.shift();
  if (!config || !(budget > 0))
    throw new Error('usage: npx tsx bench/learning_curve.ts <config.yaml> [--budget-minutes M > 0] [key=value ...]');
  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const local = await useBenchNamespace(log);
  const { input } = runInputFromFile(config, `curve-${configName(config)}-${stamp}`, args);
  const load = [loadavg()[0]];
  const started = performance.now();
  const budgetTimer = setTimeout(() => {
    log(`--- ${budget} min since the start: stopping run ${input.runId} (the step in flight and the final validation finish)`);
    void connectClient(local)
      .then((client) => sendControl(client, input.runId, 'stop', `the ${budget}-minute budget of bench/learning_curve.ts`))
      .catch((err: unknown) => log(`stop failed: ${String(err)}`));
  }, budget * 60_000);
  await train(input, { workers: true, rolloutWorkers: cpus().length, log });
  clearTimeout(budgetTimer);
  const wall = (performance.now() - started) / 1000;
  load.push(loadavg()[0]);

  const store = new ObjectStore(local.s3);
  let steps = input.config.max_steps;
  while (steps > 0 && !(await store.exists(metricsKey(input.runId, steps)))) steps--; // stopped early: the last step with metrics
  const m = await stepMetrics(store, input.runId, steps);
  const reused = m[0]['warmup/reused'] === 1;
  const warmup = reused ? 0 : (m[0]['warmup/seconds'] ?? 0);
  const f = (x: number | undefined, d = 3) => (x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d));
  console.log(
    `${config} ${args.join(' ')}: run ${input.runId}, ${cpus().length} cores, load average (1 min) ${load.map((l) => l.toFixed(2)).join(' -> ')}`,
  );
  console.log(
    `warm-up: ${reused ? 'reused from an earlier run (its time is not counted)' : `${f(warmup / 60, 1)} min`}; wall time of the whole run ${f(wall / 60, 1)} min (servers and workers included)`,
  );
  console.log('');
  console.log('step  minutes  train_success  val_success');
  let minutes = warmup / 60;
  const vals: Array<{ step: number; minutes: number; success: number }> = [];
  for (let step = 0; step <= steps; step++) {
    const val = m[step]['val/env/success'];
    // A step-k validation (k < max_steps) runs inside step k's time/step; the final one after the last step.
    const at = minutes + (m[step]['time/step'] ?? m[step]['time/validation'] ?? 0) / 60;
    if (val !== undefined) vals.push({ step, minutes: at, success: val });
    console.log(`${String(step).padStart(4)}  ${f(at, 1).padStart(7)}  ${f(m[step]['env/success']).padStart(13)}  ${f(val).padStart(11)}`);
    minutes = at;
  }
  const start = vals[0];
  const within = vals.filter((v) => v.minutes <= budget).at(-1);
  console.log('');
  console.log(`held-out success after the warm start (step 0): ${f(start?.success)}`);
  console.log(
    within
      ? `held-out success at the last validation within ${budget} min (step ${within.step}, ${f(within.minutes, 1)} min): ${f(within.success)}; RL gain over the warm start ${f(within.success - start.success)}`
      : `no validation finished within ${budget} min`,
  );
  console.log(`best held-out success: ${f(Math.max(...vals.map((v) => v.success)))}; all ${steps} steps took ${f(minutes, 1)} min`);
}

/** The config's file name without folder and extension (the run id prefix). */
function configName(path: string): string {
  return path.replace(/^.*\//, '').replace(/\.ya?ml$/, '');
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
