/**
 * `starpo report <runId> [-o file]` (one self-contained HTML file: learning curves, validation table,
 * collapse signals, trajectory browser; src/report/) and `starpo trajectories <runId> --step N`
 * (a step's best and worst env groups turn by turn in the terminal; trajectories.ts). Both read the
 * run from the object store, so they work on running, finished and failed runs alike; the report's
 * summary adds the run's state from Temporal when its server answers.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { resolveEndpoints } from '../../infra/lifecycle';
import type { InfraEndpoints } from '../../infra/types';
import { type Progress, type RunStatus, sweepProgressQuery } from '../contract';
import { ObjectStore } from '../storage/object_store';
import { errorMessage } from './exit_codes';
import { checkOutputFile, writeFileAtomically } from './file_args';
import { isStoredSweep, loadRunSpec, loadSweepSpec, runIdArgument } from './known_run';

/** Parses an integer option >= `min`; a bad value is a usage error (exit 2). */
export const intAtLeast =
  (min: number) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${JSON.stringify(value)} is not an integer >= ${min}`);
    return n;
  };

/** The servers in use (never starts them). @throws InfraUnavailableError (exit 3) */
function endpoints(): Promise<InfraEndpoints> {
  return resolveEndpoints({ start: false, log: (line) => console.error(line) });
}

/** What a running workflow is doing in each phase of its `progress` query. */
const PHASES: Record<Progress['phase'], string> = {
  preparing: 'in warm-up (preparing the step-0 policy)',
  rollout: 'rollouts',
  update: 'update',
  validation: 'validation',
  paused: 'paused (see starpo unpause)',
  done: 'finishing',
};

/**
 * The run's state line of the report summary, from `starpo status`'s RunStatus (operate.ts: the
 * workflow's Temporal status and its `progress` query), e.g. `RUNNING: in warm-up, step 0 of 6`;
 * `unknown: <why>` when Temporal could not be asked (status null). Pure.
 */
export function runStateText(status: RunStatus | null, why = 'the Temporal server was not asked'): string {
  if (!status) return `unknown: ${why}`;
  if (status.status === 'RUNNING') {
    const p = status.progress;
    if (!p) return `RUNNING, step ${status.step ?? '?'} done${status.note ? ` (${status.note})` : ''}`;
    return `RUNNING: ${PHASES[p.phase]}, step ${p.step} of ${p.maxSteps} done${p.stopRequested ? `, stopping (${p.stopRequested})` : ''}`;
  }
  if (status.status === 'COMPLETED' && status.result) {
    return `COMPLETED after ${status.result.steps} steps${status.result.stoppedBy ? `, stopped by ${status.result.stoppedBy}` : ''}`;
  }
  return `${status.status}${status.failure ? `: ${status.failure}` : ''}`;
}

/**
 * The run's state line for the report: its Temporal status and `progress` query (`starpo status`),
 * or `unknown: ...` saying why when the Temporal server does not answer or has no such workflow.
 */
export async function runState(e: InfraEndpoints, runId: string): Promise<string> {
  const { connectClient } = require('./train') as typeof import('./train');
  const { runStatus } = require('./operate') as typeof import('./operate');
  let client: Awaited<ReturnType<typeof connectClient>>;
  try {
    client = await connectClient(e);
  } catch (err) {
    return runStateText(null, (err as Error).message);
  }
  try {
    return runStateText(await runStatus(client, runId));
  } catch (err) {
    return runStateText(null, `Temporal: ${errorMessage(err)}`);
  } finally {
    await client.connection.close();
  }
}

/** The sweep's state line for its report: its Temporal status, and while it runs its runs by state. */
async function sweepState(e: InfraEndpoints, sweepId: string): Promise<string> {
  const { connectClient } = require('./train') as typeof import('./train');
  let client: Awaited<ReturnType<typeof connectClient>>;
  try {
    client = await connectClient(e);
  } catch (err) {
    return `unknown: ${(err as Error).message}`;
  }
  try {
    const handle = client.workflow.getHandle(sweepId);
    const status = (await handle.describe()).status.name;
    if (status !== 'RUNNING') return status;
    const p = await handle.query(sweepProgressQuery);
    const count = (state: string) => p.children.filter((c) => c.state === state).length;
    return `RUNNING: ${count('completed')} completed, ${count('running')} running, ${count('waiting')} waiting, ${count('failed')} failed${p.paused ? ' (paused)' : ''}`;
  } catch (err) {
    return `unknown: Temporal: ${errorMessage(err)}`;
  } finally {
    await client.connection.close();
  }
}

/** Adds `report` and `trajectories` to the program. */
export function registerReportCommands(program: Command): void {
  program
    .command('report')
    .description(
      'write one self-contained HTML report of a run (learning curves, validation, collapse signals, trajectory browser) or of a sweep (its runs compared per grid point over seeds)',
    )
    .argument('<id>', 'a run id (see starpo list) or a sweep id', runIdArgument)
    .option('-o, --output <file>', 'output file (default report-<runId>.html; missing folders are created)')
    .option(
      '--trajectory-steps <n>',
      'at most this many train steps in the trajectory browser (evenly spaced, first and last included)',
      intAtLeast(1),
      50,
    )
    .action(async (runId: string, opts: { output?: string; trajectorySteps: number }) => {
      const output = opts.output ?? `report-${runId}.html`;
      const file = checkOutputFile('-o', output);
      const { buildReport, buildSweepReport } = require('../report/build') as typeof import('../report/build');
      const e = await endpoints();
      const store = new ObjectStore(e.s3);
      const html = (await isStoredSweep(store, runId))
        ? await buildSweepReport(store, await loadSweepSpec(store, runId), await sweepState(e, runId))
        : await buildReport(store, await loadRunSpec(store, runId), {
            trajectorySteps: opts.trajectorySteps,
            state: await runState(e, runId),
            warn: (line) => console.error(line),
          });
      writeFileAtomically(file, html);
      console.log(`wrote ${output} (${(Buffer.byteLength(html) / 1024).toFixed(0)} KiB); open it in a browser, it needs no network`);
    });

  program
    .command('trajectories')
    .description(
      "show a step's env groups in the terminal: the best and worst turn by turn (observation, response, action, reward, scores)",
    )
    .argument('<runId>', 'run id (see starpo list)', runIdArgument)
    .requiredOption('--step <n>', 'pipeline step whose rollouts to show', intAtLeast(0))
    .option('--tag <tag>', 'only groups of this env tag')
    .option('--group <group>', 'show this group only: its group id or trajGroupId')
    .addOption(
      new Option('--split <split>', 'train rollouts, or the validation rollouts of an evaluation step')
        .choices(['train', 'val'])
        .default('train'),
    )
    .option('--width <n>', 'line width (default: the terminal width, else 160)', intAtLeast(40))
    .action(async (runId: string, opts: { step: number; tag?: string; group?: string; split: 'train' | 'val'; width?: number }) => {
      const { trajectoriesText } = require('./trajectories') as typeof import('./trajectories');
      const width = opts.width ?? (process.stdout.columns || 160);
      console.log(
        await trajectoriesText(new ObjectStore((await endpoints()).s3), runId, { ...opts, width, warn: (line) => console.error(line) }),
      );
    });
}
