/**
 * Fault injection: a short FrozenLake run, first undisturbed, then `--trials` times while each worker role and
 * each server is SIGKILLed once at a seeded random moment and started again; each trial's final checkpoint is
 * compared with the undisturbed run's. Prints every kill, then trials, kills survived and equality.
 *
 *   node --import tsx bench/fault_injection.ts [--trials 3] [--steps 4] [--seed 1] [--config configs/frozen_lake_solver.yaml]
 */
import { parseArgs } from 'node:util';
import { runInputFromFile } from '../src/cli/run_input';
import type { RunSpec, StarpoRunResult } from '../src/contract';
import { TASK_QUEUES, WORKFLOW_TYPE } from '../src/contract';
import { metricsKey } from '../src/storage/keys';
import { CrashableStack, checkpointFingerprint, faultPlan, runWithFaults, shortRunInput } from '../test/helpers/faults';
import { startTrainingStack } from '../test/helpers/stack';

/**
 * The run is test/helpers/faults.ts shortRunInput (the test fixture) or, with `--config`, that config as
 * written; both with `--steps` updates and no validation, the same config and seed in every trial. Killed: the rollout worker, the update worker, the control worker,
 * the Temporal dev server and the S3 server (servers restart on the same ports with the same state). Compared:
 * model.safetensors (a LoRA run's adapter_model.safetensors) and optimizer sha256, and the trainer state without timings. Starts its own servers on
 * free ports (temp state folder) and worker processes, and stops them at the end.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      trials: { type: 'string', default: '3' },
      steps: { type: 'string', default: '4' },
      seed: { type: 'string', default: '1' },
      config: { type: 'string' },
    },
  });
  const { config } = values;
  const [trials, steps, seed] = [Number(values.trials), Number(values.steps), Number(values.seed)];
  const training = await startTrainingStack();
  const { client, store } = training;
  const stack = new CrashableStack(training.servers, training.workers, training.logDir);
  try {
    const run = async (name: string) => {
      const runId = `fi-${process.pid}-${name}`;
      const input: RunSpec = config
        ? runInputFromFile(config, runId, [`max_steps=${steps}`, 'eval_steps=0']).input
        : shortRunInput(runId, steps);
      await client.workflow.start(WORKFLOW_TYPE, { taskQueue: TASK_QUEUES.control, workflowId: input.runId, args: [input] });
      return input.runId;
    };
    let t = Date.now();
    const refId = await run('reference');
    const { result: ref } = await runWithFaults<StarpoRunResult>(client, refId, stack, []);
    const expected = await checkpointFingerprint(store, ref.finalCheckpoint);
    // The trials reuse the reference's warm-up: kills are planned over its training steps.
    let horizon = 0;
    for (let step = 0; step < steps; step++)
      horizon += ((await store.getJson(metricsKey(refId, step))) as { metrics: Record<string, number> }).metrics['time/step'] ?? 0;
    console.log(
      `${config ?? 'test/fixtures/tiny_frozen_lake.yaml'}, ${steps} steps: undisturbed run: ${((Date.now() - t) / 1000).toFixed(1)} s (steps ${horizon.toFixed(1)} s); model.safetensors sha256 ${expected.model}`,
    );

    let killsSurvived = 0;
    let equal = 0;
    for (let trial = 0; trial < trials; trial++) {
      t = Date.now();
      const plan = faultPlan(seed, trial, horizon);
      const { result, kills } = await runWithFaults<StarpoRunResult>(client, await run(`trial-${trial}`), stack, plan);
      const got = await checkpointFingerprint(store, result.finalCheckpoint);
      const same = JSON.stringify(got) === JSON.stringify(expected);
      killsSurvived += kills.length;
      equal += same ? 1 : 0;
      const killed = kills
        .map((k) => `${k.target}@${k.atSeconds.toFixed(1)}s(${k.seenPhase}, down ${k.downSeconds.toFixed(1)}s)`)
        .join(', ');
      console.log(
        `trial ${trial + 1}: ${((Date.now() - t) / 1000).toFixed(1)} s, ${result.steps} steps, kills ${kills.length}/${plan.length}: ${killed}; final checkpoint ${same ? 'identical' : `DIFFERENT (model ${got.model})`}`,
      );
    }
    console.log(`trials ${trials}, kills survived ${killsSurvived}, identical final checkpoints ${equal}/${trials}`);
    if (equal !== trials) process.exitCode = 1;
  } finally {
    await training.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
