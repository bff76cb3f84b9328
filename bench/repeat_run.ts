/**
 * Determinism of whole runs: trains the same config twice (two run ids, same seed) through `starpo train`
 * (src/cli/train.ts: local servers, a control, 2 rollout and an update worker process, each role on this
 * host's default backend unless STARPO_BACKEND says), then compares the two runs step by step: every metric
 * but wall times (time/*) and the warm-up's facts (warmup/*: the first run may train the warm-up, the second
 * reuses it), and the sha256 of the final weights. Prints where each role computed and the verdict.
 *
 *   node --import tsx bench/repeat_run.ts [config.yaml] [steps]      (default configs/frozen_lake_solver.yaml, 8)
 *
 * Runs in its own Temporal namespace (bench/lib/bench_run.ts), so workers of other runs cannot take its activities.
 */
import { runInputFromFile } from '../src/cli/run_input';
import { train } from '../src/cli/train';
import { metricsKey } from '../src/storage/keys';
import { readLatestComplete } from '../src/storage/manifest';
import { ObjectStore, sha256Hex } from '../src/storage/object_store';
import type { StepMetrics } from '../src/report/run_data';
import { describeCompute } from '../src/workflows/compute';
import { useBenchNamespace } from './lib/bench_run';

/** A finished run's repeatable metrics per step, where each step computed, and its final weights' sha256. */
async function runFacts(store: ObjectStore, runId: string, steps: number) {
  const metrics: Array<Record<string, number>> = [];
  const compute = new Set<string>();
  for (let step = 0; step < steps; step++) {
    const m = (await store.getJson(metricsKey(runId, step))) as StepMetrics;
    metrics.push(Object.fromEntries(Object.entries(m.metrics).filter(([k]) => !k.startsWith('time/') && !k.startsWith('warmup/'))));
    if (m.compute) compute.add(describeCompute(m.compute));
  }
  const latest = await readLatestComplete(store, runId);
  const weights = latest?.step === steps ? sha256Hex(latest.files['model.safetensors'] as Uint8Array) : 'missing';
  return { metrics, compute: [...compute], weights };
}

async function main(): Promise<void> {
  const [file = 'configs/frozen_lake_solver.yaml', stepsArg = '8'] = process.argv.slice(2);
  const steps = Number(stepsArg);
  const log = (line: string) => console.error(line);
  const e = await useBenchNamespace(log);
  const store = new ObjectStore(e.s3);
  const stamp = Date.now();
  const facts = [];
  for (const name of ['a', 'b']) {
    const { input } = runInputFromFile(file, `bench-repeat-${stamp}-${name}`, [`max_steps=${steps}`, 'eval_steps=0']);
    await train(input, { workers: true, rolloutWorkers: 2, log });
    facts.push({ runId: input.runId, ...(await runFacts(store, input.runId, steps)) });
  }
  const [a, b] = facts;
  const differences: string[] = [];
  for (let step = 0; step < steps; step++) {
    const keys = new Set([...Object.keys(a.metrics[step]), ...Object.keys(b.metrics[step])]);
    for (const k of keys) {
      if (!Object.is(a.metrics[step][k], b.metrics[step][k])) differences.push(`step ${step} ${k}: ${a.metrics[step][k]} vs ${b.metrics[step][k]}`);
    }
  }
  const compared = a.metrics.reduce((n, m) => n + Object.keys(m).length, 0);
  console.log(`config ${file}, ${steps} steps, runs ${a.runId} and ${b.runId}`);
  console.log(`compute: ${a.runId}: ${a.compute.join('; ')} | ${b.runId}: ${b.compute.join('; ')}`);
  console.log(`metrics compared: ${compared} values over ${steps} steps; differing: ${differences.length}`);
  for (const d of differences.slice(0, 10)) console.log(`  ${d}`);
  console.log(`final weights sha256: ${a.weights} vs ${b.weights} (${a.weights === b.weights ? 'identical' : 'DIFFERENT'})`);
  console.log(JSON.stringify({ bench: 'repeat_run', config: file, steps, runs: [a.runId, b.runId], compute: a.compute, compared, differing: differences.length, weightsIdentical: a.weights === b.weights }));
}

void main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
