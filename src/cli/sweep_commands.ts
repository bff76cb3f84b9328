/**
 * `starpo sweep <config>` (start a sweep with local workers and follow it) and `starpo sweep-json <config>`
 * (the input of `temporal workflow start --type starpoSweep`). status, pause, unpause, stop and resume take a
 * sweep id as they take a run id (main.ts routes it to sweep.ts / sweep_status.ts).
 */
import { type Command, Option } from 'commander';
import type { SweepResult } from '../contract';
import { checkOutputFile, writeFileAtomically } from './file_args';
import { runIdArgument } from './known_run';
import { backendOption, CONFIG_HELP, defaultRolloutWorkers, log, OVERRIDES_HELP, positiveInt, useBackend } from './options';
import { type GridAxis, gridArgument, sweepSpecFromFile } from './sweep_spec';

/** The options that define a sweep, shared by `sweep` and `sweep-json`. */
function sweepOptions(command: Command): Command {
  return command
    .argument('<config>', CONFIG_HELP)
    .argument('[overrides...]', `${OVERRIDES_HELP}; applied to every run of the sweep`)
    .addOption(
      new Option('--seeds <n>', "runs per grid point: seeds seed, seed+1, ... (the config's seed first)").argParser(positiveInt).default(3),
    )
    .option('--grid <key=v1,v2>', 'a config key and its values, one run per combination of every --grid (repeatable)', gridArgument, [])
    .option('--parallel <k>', 'at most this many runs at a time', positiveInt, 1)
    .option(
      '--sweep-id <id>',
      'sweep id (also its workflow id; the runs are <id>-[g<point>-]seed<seed>); default <config>-sweep-<UTC time>',
      runIdArgument,
    );
}

interface SweepFlags {
  seeds: number;
  grid: GridAxis[];
  parallel: number;
  sweepId?: string;
}

/** Exit code 1 when a run of the sweep failed (its table and the command to continue it were printed). */
function exitOnFailure(result: SweepResult): void {
  if (result.children.some((c) => c.state === 'failed')) process.exitCode = 1;
}

export function registerSweepCommands(program: Command): void {
  sweepOptions(program.command('sweep'))
    .description('runs of one config over seeds and a grid of config values, as child workflows of one durable sweep; follows it')
    .option('--no-workers', 'do not spawn local workers (they run elsewhere)')
    .option('--rollout-workers <n>', 'rollout worker processes (shards run in parallel)', positiveInt, defaultRolloutWorkers)
    .addOption(backendOption())
    .action(
      async (path: string, overrides: string[], opts: SweepFlags & { workers: boolean; rolloutWorkers: number; backend?: string }) => {
        const spec = sweepSpecFromFile(path, overrides, opts);
        if (opts.workers) useBackend(opts.backend);
        const { sweep } = require('./sweep') as typeof import('./sweep');
        exitOnFailure(await sweep(spec, { workers: opts.workers, rolloutWorkers: opts.rolloutWorkers, log }));
      },
    );

  sweepOptions(program.command('sweep-json'))
    .description('write the input of `temporal workflow start --type starpoSweep --input-file` from a YAML config')
    .option('-o, --output <file>', 'output file', 'sweep.json')
    .action((path: string, overrides: string[], opts: SweepFlags & { output: string }) => {
      const file = checkOutputFile('-o', opts.output);
      const spec = sweepSpecFromFile(path, overrides, opts);
      writeFileAtomically(file, JSON.stringify(spec, null, 2));
      log(`wrote ${opts.output} (sweep id ${spec.sweepId}, ${spec.children.length} runs)`);
    });
}

/** `starpo resume <id>` of a sweep, for main.ts. */
export async function resumeSweepCommand(sweepId: string, opts: { workers: boolean; rolloutWorkers: number }): Promise<void> {
  const { resumeSweep } = require('./sweep') as typeof import('./sweep');
  exitOnFailure(await resumeSweep(sweepId, { ...opts, log }));
}
