/**
 * The `starpo` command. Exit codes: 0 ok, 1 run failed, 2 bad input (config, arguments),
 * 3 infra unavailable (no server binary, servers unreachable).
 */
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { stringify } from 'yaml';
import { registerInfraCommands } from '../../infra/cli';
import { acceptedNotes, loadConfigFile } from '../config/load';
import { ROLES, Role } from '../workers/roles';
import { exitCodeOf } from './exit_codes';
import { resolveEndpoints } from './endpoints';
import { runInputFromFile } from './run_input';

// Heavy modules (tfjs, Temporal worker) load only in the commands that use them (lazy require).

const log = (line: string) => console.log(line);

const OVERRIDES_HELP = 'Hydra-style overrides applied before interpolation: a.b=value, +a.b=value (new key), ++a.b=value';

/** One rollout worker per core (rollout shards are independent, CPU-bound processes). */
const defaultRolloutWorkers = Math.max(1, Math.min(4, availableParallelism()));

/** Parses a positive integer option; a bad value is a usage error (exit 2). */
function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${JSON.stringify(value)} is not a positive integer`);
  return n;
}
const program = new Command();
program
  .name('starpo')
  .description('StarPO training runs on Temporal with an S3 object store')
  .option('--verbose', 'print stack traces')
  .exitOverride(); // usage errors reach the handler below and exit 2

program
  .command('train')
  .description('validate a config, start servers if needed, spawn workers, run StarPO and follow it')
  .argument('<config>', 'YAML config with ROLL key names, e.g. configs/frozen_lake.yaml')
  .argument('[overrides...]', OVERRIDES_HELP)
  .option('--run-id <id>', 'run id (also the workflow id); default <config>-<UTC time>')
  .option('--no-workers', 'do not spawn local workers (they run elsewhere)')
  .option('--rollout-workers <n>', 'rollout worker processes (shards run in parallel)', positiveInt, defaultRolloutWorkers)
  .action(async (path: string, overrides: string[], opts: { runId?: string; workers: boolean; rolloutWorkers: number }) => {
    const { input, ...accepted } = runInputFromFile(path, opts.runId, overrides);
    acceptedNotes(accepted).forEach(log);
    const { train } = require('./train') as typeof import('./train');
    await train(input, { workers: opts.workers, rolloutWorkers: opts.rolloutWorkers, log });
  });

program
  .command('resume')
  .description('continue a run: attach workers to a running one, or restart a closed one from latest.json')
  .argument('<runId>')
  .option('--no-workers', 'do not spawn local workers')
  .option('--rollout-workers <n>', 'rollout worker processes (shards run in parallel)', positiveInt, defaultRolloutWorkers)
  .action(async (runId: string, opts: { workers: boolean; rolloutWorkers: number }) => {
    const { resume } = require('./train') as typeof import('./train');
    await resume(runId, { workers: opts.workers, rolloutWorkers: opts.rolloutWorkers, log });
  });

program
  .command('worker')
  .description('run workers of one role against TEMPORAL_ADDRESS / S3_ENDPOINT (or the local infra)')
  .addOption(new Option('--role <role>', 'which task queues to poll').choices([...ROLES]).default('all'))
  .action(async (opts: { role: Role }) => {
    const { runWorkers } = require('../workers/run') as typeof import('../workers/run');
    await runWorkers(opts.role, await resolveEndpoints({ start: false, log }), log);
  });

program
  .command('run-json')
  .description('write the workflow input for `temporal workflow start --input-file` from a YAML config')
  .argument('<config>')
  .argument('[overrides...]', OVERRIDES_HELP)
  .option('-o, --output <file>', 'output file', 'run.json')
  .option('--run-id <id>', 'run id (also the workflow id)')
  .action((path: string, overrides: string[], opts: { output: string; runId?: string }) => {
    const { input } = runInputFromFile(path, opts.runId, overrides);
    writeFileSync(opts.output, JSON.stringify(input, null, 2));
    log(`wrote ${opts.output} (run id ${input.runId})`);
  });

const config = program.command('config').description('config files (Hydra defaults lists and ${...} interpolations resolved)');
config.command('check').argument('<file>').argument('[overrides...]', OVERRIDES_HELP).description('validate only')
  .action((path: string, overrides: string[]) => {
    const loaded = loadConfigFile(path, overrides);
    log(`${path}: ok`);
    acceptedNotes(loaded).forEach(log);
  });
config.command('print').argument('<file>').argument('[overrides...]', OVERRIDES_HELP)
  .description('print the resolved config as YAML, defaults applied (ignored keys and variables on stderr)')
  .action((path: string, overrides: string[]) => {
    const loaded = loadConfigFile(path, overrides);
    process.stdout.write(stringify(loaded.config));
    acceptedNotes(loaded).forEach((line) => console.error(line));
  });

program
  .command('status')
  .description("print a run's status and progress (the workflow's `progress` query, or its result once closed) as JSON")
  .argument('<runId>')
  .action(async (runId: string) => {
    const { connectClient } = require('./train') as typeof import('./train');
    const { progressQuery } = require('../workflows/api') as typeof import('../workflows/api');
    const client = await connectClient(await resolveEndpoints({ start: false, log }));
    const handle = client.workflow.getHandle(runId);
    const status = (await handle.describe()).status.name;
    const out: Record<string, unknown> = { runId, status };
    if (status === 'RUNNING') {
      // A query needs a control worker; do not hang when none is polling.
      const timeout = new Promise<null>((resolve) => setTimeout(() => resolve(null), 5000).unref());
      out.progress = await Promise.race([handle.query(progressQuery), timeout]);
      if (out.progress === null) out.note = `no control worker answered within 5 s; start workers with: starpo resume ${runId}`;
    } else if (status === 'COMPLETED') out.result = await handle.result();
    else out.note = `the run is closed; continue it with: starpo resume ${runId}`;
    log(JSON.stringify(out, null, 2));
  });

registerInfraCommands(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2); // commander printed the message
  const verbose = program.opts().verbose === true;
  console.error(verbose && err instanceof Error ? err.stack : `error: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(exitCodeOf(err));
});
