/**
 * async_generation_ratio 1 vs 0 on the same config: runs it twice through Temporal exactly as `starpo train`
 * does, synchronous (r = 0) and with rollouts one step ahead (r = 1), then prints steps per minute for each,
 * their ratio, and both learning curves side by side (train and validation success, staleness per step).
 *
 *   npx tsx bench/async_rollouts.ts [config.yaml] [key=value ...]   (default: configs/frozen_lake.yaml max_steps=10 eval_steps=5)
 */
import { cpus, loadavg } from 'node:os';
import { runInputFromFile } from '../src/cli/run_input';
import { train } from '../src/cli/train';
import { ObjectStore } from '../src/storage/object_store';
import { BENCH_NAMESPACE as NAMESPACE, stepMetrics, useBenchNamespace } from './lib/bench_run';

interface Summary {
  runId: string;
  steps: number;
  loopSeconds: number;
  perMinute: number;
  perMinuteNoVal: number;
  rollout: number;
  update: number;
  wait: number | null;
}

function summarise(runId: string, m: Array<Record<string, number>>, steps: number): Summary {
  const train = m.slice(0, steps);
  const loopSeconds = train.reduce((s, x) => s + x['time/step'], 0);
  const noVal = train.filter((x) => x['val/env/success'] === undefined);
  const mean = (k: string) => train.reduce((s, x) => s + (x[k] ?? 0), 0) / steps;
  return {
    runId,
    steps,
    loopSeconds,
    perMinute: (60 * steps) / loopSeconds,
    perMinuteNoVal: (60 * noVal.length) / noVal.reduce((s, x) => s + x['time/step'], 0),
    rollout: mean('time/rollout'),
    update: mean('time/update'),
    wait: train[0]['time/rollout_wait'] === undefined ? null : mean('time/rollout_wait'),
  };
}

/**
 * Local servers, a control worker, one rollout worker per core and an update worker as processes; the curves
 * are read from the runs' stored metrics. Both runs have the same settings, so the second reuses the warm-up
 * the first stored (or an earlier run stored) under warmup/<hash>/; steps per minute count only the training
 * loop (the sum of `time/step`, which includes the validations that are due), never the warm-up. "steps
 * without validation" counts only the steps that ran no validation. The load average is printed: other
 * processes on the machine slow both runs.
 * The runs use their own Temporal namespace (`starpo-bench`, registered on the local dev server with the
 * search attributes when missing), so workers of other runs on the same server, which poll the same task
 * queues in `default`, cannot take their activities; the object store (and its warm-up cache) is shared.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const config = args[0] && !args[0].includes('=') ? args.shift()! : 'configs/frozen_lake.yaml';
  const overrides = args.length > 0 ? args : ['max_steps=10', 'eval_steps=5'];
  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const local = await useBenchNamespace(log);
  const load = [loadavg()[0]];
  const runs: Array<{ ratio: number; runId: string }> = [];
  for (const ratio of [0, 1]) {
    const { input } = runInputFromFile(config, `async-bench-r${ratio}-${stamp}`, [...overrides, `async_generation_ratio=${ratio}`]);
    log(`--- async_generation_ratio=${ratio}: run ${input.runId}`);
    await train(input, { workers: true, rolloutWorkers: cpus().length, log });
    runs.push({ ratio, runId: input.runId });
    load.push(loadavg()[0]);
  }
  const store = new ObjectStore(local.s3);
  const { input } = runInputFromFile(config, 'x', overrides);
  const steps = input.config.max_steps;
  const metrics = await Promise.all(runs.map((r) => stepMetrics(store, r.runId, steps)));
  const sums = runs.map((r, i) => summarise(r.runId, metrics[i], steps));

  const f = (x: number | undefined, d = 3) => (x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d));
  console.log(
    `${config} ${overrides.join(' ')}: ${cpus().length} cores, ${cpus().length} rollout workers + 1 update worker (namespace ${NAMESPACE}); load average (1 min) ${load.map((l) => l.toFixed(2)).join(' -> ')}`,
  );
  console.log(`warm-up reused: ${runs.map((r, i) => `r=${r.ratio} ${f(metrics[i][0]['warmup/reused'], 0)}`).join(', ')}`);
  console.log('');
  console.log(
    'ratio  run id                               loop s  steps/min  steps/min (no-val steps)  rollout s  update s  rollout wait s',
  );
  for (const [i, s] of sums.entries()) {
    console.log(
      `r=${runs[i].ratio}    ${s.runId.padEnd(35)}  ${f(s.loopSeconds, 1).padStart(6)}  ${f(s.perMinute, 2).padStart(9)}  ${f(s.perMinuteNoVal, 2).padStart(24)}  ${f(s.rollout, 2).padStart(9)}  ${f(s.update, 2).padStart(8)}  ${s.wait === null ? '-' : f(s.wait, 2)}`,
    );
  }
  console.log(
    `steps per minute r=1 / r=0: ${f(sums[1].perMinute / sums[0].perMinute, 2)}x (all steps), ${f(sums[1].perMinuteNoVal / sums[0].perMinuteNoVal, 2)}x (steps without validation)`,
  );
  console.log('');
  console.log('        ------------ r=0 ------------   ------------------- r=1 -------------------');
  console.log('step    train_success  val_success      train_success  val_success  staleness (mean)');
  for (let step = 0; step <= steps; step++) {
    const [a, b] = metrics.map((m) => m[step]);
    console.log(
      `${String(step).padStart(4)}    ${f(a['env/success']).padStart(13)}  ${f(a['val/env/success']).padStart(11)}      ${f(b['env/success']).padStart(13)}  ${f(b['val/env/success']).padStart(11)}  ${f(b['rollout/staleness/mean'], 0).padStart(16)}`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
