/**
 * Determinism of whole runs: trains the same config twice (two run ids, same seed) through `starpo train`,
 * then compares the two runs step by step (every metric but wall times and the warm-up's facts) and the
 * sha256 of the final weights. Prints where each role computed and the verdict.
 *
 *   node --import tsx bench/repeat_run.ts [config.yaml] [steps] [--save facts.json] [--against facts.json]
 *   (default configs/frozen_lake_solver.yaml, 8 steps)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { runInputFromFile } from '../src/cli/run_input';
import { train } from '../src/cli/train';
import type { StepMetrics } from '../src/contract';
import { readLatestComplete } from '../src/storage/checkpoint';
import { metricsKey } from '../src/storage/keys';
import { ObjectStore, sha256Hex } from '../src/storage/object_store';
import { describeCompute } from '../src/workflows/format';
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

/** Every metric that differs between two runs' per-step metrics, as `step N key: a vs b`. */
function metricDifferences(a: Array<Record<string, number>>, b: Array<Record<string, number>>, steps: number): string[] {
  const out: string[] = [];
  for (let step = 0; step < steps; step++) {
    const keys = new Set([...Object.keys(a[step] ?? {}), ...Object.keys(b[step] ?? {})]);
    for (const k of keys) {
      if (!Object.is(a[step]?.[k], b[step]?.[k])) out.push(`step ${step} ${k}: ${a[step]?.[k]} vs ${b[step]?.[k]}`);
    }
  }
  return out;
}

/** `--name value` from argv (removed from it), or undefined. */
function takeOption(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  if (i < 0) return undefined;
  const [, value] = argv.splice(i, 2);
  return value;
}

/**
 * `starpo train` (src/cli/train.ts) with local servers, a control, 2 rollout and an update worker process,
 * each role on this host's default backend unless STARPO_BACKEND says; in its own Temporal namespace
 * (bench/lib/bench_run.ts), so workers of other runs cannot take its activities. Not compared: wall times
 * (time/*) and the warm-up's facts (warmup/*: the first run may train the warm-up, the second reuses it).
 * `--save` writes the first run's per-step metrics and weights digest; `--against` also compares both runs
 * with such a file, e.g. one saved before a refactor.
 */
async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const saveFile = takeOption(argv, '--save');
  const againstFile = takeOption(argv, '--against');
  const [file = 'configs/frozen_lake_solver.yaml', stepsArg = '8'] = argv;
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
  const differences = metricDifferences(a.metrics, b.metrics, steps);
  const compared = a.metrics.reduce((n, m) => n + Object.keys(m).length, 0);
  console.log(`config ${file}, ${steps} steps, runs ${a.runId} and ${b.runId}`);
  console.log(`compute: ${a.runId}: ${a.compute.join('; ')} | ${b.runId}: ${b.compute.join('; ')}`);
  console.log(`metrics compared: ${compared} values over ${steps} steps; differing: ${differences.length}`);
  for (const d of differences.slice(0, 10)) console.log(`  ${d}`);
  console.log(`final weights sha256: ${a.weights} vs ${b.weights} (${a.weights === b.weights ? 'identical' : 'DIFFERENT'})`);
  let against: { differing: number; weightsIdentical: boolean } | undefined;
  if (againstFile) {
    const saved = JSON.parse(readFileSync(againstFile, 'utf8')) as { metrics: Array<Record<string, number>>; weights: string };
    const diffs = [...metricDifferences(saved.metrics, a.metrics, steps), ...metricDifferences(saved.metrics, b.metrics, steps)];
    against = { differing: diffs.length, weightsIdentical: saved.weights === a.weights && saved.weights === b.weights };
    console.log(
      `against ${againstFile}: differing metric values ${diffs.length}; final weights ${against.weightsIdentical ? 'identical' : 'DIFFERENT'}`,
    );
    for (const d of diffs.slice(0, 10)) console.log(`  ${d}`);
  }
  if (saveFile) {
    writeFileSync(saveFile, JSON.stringify({ config: file, steps, compute: a.compute, metrics: a.metrics, weights: a.weights }));
    console.log(`saved ${a.runId}'s metrics and weights digest to ${saveFile}`);
  }
  console.log(
    JSON.stringify({
      bench: 'repeat_run',
      config: file,
      steps,
      runs: [a.runId, b.runId],
      compute: a.compute,
      compared,
      differing: differences.length,
      weightsIdentical: a.weights === b.weights,
      against,
    }),
  );
}

void main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
