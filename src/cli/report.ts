/**
 * `starpo report <runId> [-o file]` (one self-contained HTML file: learning curves, validation table,
 * collapse signals, trajectory browser; src/report/) and `starpo trajectories <runId> --step N`
 * (a step's best and worst env groups turn by turn in the terminal; trajectories.ts). Both read the
 * run from the object store only, so they work on running, finished and failed runs alike.
 */
import { writeFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ObjectStore } from '../storage/object_store';
import { resolveEndpoints } from './endpoints';

/** Parses an integer option >= `min`; a bad value is a usage error (exit 2). */
const intAtLeast = (min: number) => (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${JSON.stringify(value)} is not an integer >= ${min}`);
  return n;
};

/** The object store of the servers in use (never starts them). @throws InfraUnavailableError (exit 3) */
async function store(): Promise<ObjectStore> {
  return new ObjectStore((await resolveEndpoints({ start: false, log: (line) => console.error(line) })).s3);
}

/** Adds `report` and `trajectories` to the program. */
export function registerReportCommands(program: Command): void {
  program
    .command('report')
    .description('write one self-contained HTML report of a run: learning curves, validation, collapse signals, trajectory browser')
    .argument('<runId>')
    .option('-o, --output <file>', 'output file (default report-<runId>.html)')
    .option('--trajectory-steps <n>', 'at most this many train steps in the trajectory browser (evenly spaced, first and last included)', intAtLeast(1), 50)
    .action(async (runId: string, opts: { output?: string; trajectorySteps: number }) => {
      const { buildReport } = require('../report/build') as typeof import('../report/build');
      const html = await buildReport(await store(), runId, { trajectorySteps: opts.trajectorySteps, warn: (line) => console.error(line) });
      const output = opts.output ?? `report-${runId}.html`;
      writeFileSync(output, html);
      console.log(`wrote ${output} (${(Buffer.byteLength(html) / 1024).toFixed(0)} KiB); open it in a browser, it needs no network`);
    });

  program
    .command('trajectories')
    .description("show a step's env groups in the terminal: the best and worst turn by turn (observation, response, action, reward, scores)")
    .argument('<runId>')
    .requiredOption('--step <n>', 'pipeline step whose rollouts to show', intAtLeast(0))
    .option('--tag <tag>', 'only groups of this env tag')
    .option('--group <group>', 'show this group only: its group id or trajGroupId')
    .addOption(new Option('--split <split>', 'train rollouts, or the validation rollouts of an evaluation step').choices(['train', 'val']).default('train'))
    .option('--width <n>', 'line width (default: the terminal width, else 160)', intAtLeast(40))
    .action(async (runId: string, opts: { step: number; tag?: string; group?: string; split: 'train' | 'val'; width?: number }) => {
      const { trajectoriesText } = require('./trajectories') as typeof import('./trajectories');
      const width = opts.width ?? (process.stdout.columns || 160);
      console.log(await trajectoriesText(await store(), runId, { ...opts, width, warn: (line) => console.error(line) }));
    });
}
