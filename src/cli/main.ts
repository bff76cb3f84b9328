/**
 * The `starpo` command. Exit codes: 0 ok, 1 run failed, 2 bad input (config, arguments), 3 infra unavailable
 * (no server binary, servers unreachable, a requested native backend not installed). Help texts and examples: help.ts.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { stringify } from 'yaml';
import { registerInfraCommands } from '../../infra/cli';
import { resolveEndpoints } from '../../infra/lifecycle';
import { ROLES, type Role } from '../contract';
import { refuseUnreachableEnvServers } from '../preflight/env_servers';
import { acceptedNotes, loadConfigFile } from '../preflight/load';
import { registerBackendCommands } from './backend';
import { addClusterOptions } from './cluster_options';
import { registerEnvCommands } from './env_serve';
import { errorMessage, exitCodeOf } from './exit_codes';
import { checkOutputFile, writeFileAtomically } from './file_args';
import { applyHelp } from './help';
import { runIdArgument } from './known_run';
import { registerModelCommands } from './model';
import { backendOption, CONFIG_HELP, defaultRolloutWorkers, log, nonNegativeInt, OVERRIDES_HELP, positiveInt, useBackend } from './options';
import { registerReportCommands } from './report';
import { runInputFromFile } from './run_input';
import { registerSweepCommands, resumeSweepCommand } from './sweep_commands';
import { registerTrackCommand } from './track';

// Heavy modules (tfjs, Temporal worker) load only in the commands that use them (lazy require).

// A reader that closed the pipe early (`starpo list | head`) has what it wanted: later output is dropped and
// the command ends as it would have, so `train` still stops the workers it started instead of exiting at once.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED') throw err;
});

const program = new Command();
program
  .name('starpo')
  .description('StarPO training runs on Temporal with an S3 object store')
  .version((require('../../package.json') as { version: string }).version)
  .option('--verbose', 'print stack traces')
  .exitOverride(); // usage errors reach the handler below and exit 2

program
  .command('train')
  .description('validate a config, start servers if needed, spawn workers, run StarPO and follow it')
  .argument('<config>', CONFIG_HELP)
  .argument('[overrides...]', OVERRIDES_HELP)
  .option('--run-id <id>', 'run id (also the workflow id); default <config>-<UTC time>', runIdArgument)
  .option('--no-workers', 'do not spawn local workers (they run elsewhere)')
  .option('--rollout-workers <n>', 'rollout worker processes (shards run in parallel)', positiveInt, defaultRolloutWorkers)
  .addOption(backendOption())
  .action(
    async (path: string, overrides: string[], opts: { runId?: string; workers: boolean; rolloutWorkers: number; backend?: string }) => {
      const { input, ...accepted } = runInputFromFile(path, opts.runId, overrides);
      if (opts.workers) useBackend(opts.backend);
      acceptedNotes(accepted).forEach(log);
      const { train } = require('./train') as typeof import('./train');
      await train(input, { workers: opts.workers, rolloutWorkers: opts.rolloutWorkers, log });
    },
  );

program
  .command('resume')
  .description('continue a run or a sweep: attach workers to a running one, or restart a closed one from its latest checkpoints')
  .argument('<id>', 'a run id or a sweep id')
  .option('--no-workers', 'do not spawn local workers')
  .option('--rollout-workers <n>', 'rollout worker processes (shards run in parallel)', positiveInt, defaultRolloutWorkers)
  .addOption(backendOption())
  .action(async (runId: string, opts: { workers: boolean; rolloutWorkers: number; backend?: string }) => {
    if (opts.workers) useBackend(opts.backend);
    const train = require('./train') as typeof import('./train');
    const { isSweep } = require('./sweep_status') as typeof import('./sweep_status');
    const workers = { workers: opts.workers, rolloutWorkers: opts.rolloutWorkers };
    const s = await servers(true);
    if (await isSweep(s.client, s.store, runId)) await resumeSweepCommand(runId, workers);
    else await train.resume(runId, { ...workers, log });
  });

program
  .command('eval')
  .description('validation only, for a checkpoint of a run, through the rollout activities: per-tag success and score')
  .argument('<target>', 'a run id (its latest checkpoint, or --step N) or a checkpoint key runs/<runId>/checkpoints/step-N/manifest.json')
  .option('--step <n>', 'checkpoint step of the run (0 = the warm-up)', nonNegativeInt)
  .option(
    '--config <file>',
    "play this config's validation settings (val_env_manager, val_batch_size, custom_envs, seed, ...) instead of the run's",
  )
  .option('--episodes <n>', 'validation episodes (val_batch_size): a multiple of val_env_manager.group_size', positiveInt)
  .option('--json', 'print the result as JSON (progress and notes on stderr)')
  .option('--no-workers', 'do not spawn local workers (they run elsewhere)')
  .option('--rollout-workers <n>', 'rollout worker processes (shards run in parallel)', positiveInt, defaultRolloutWorkers)
  .action(
    async (
      target: string,
      opts: { step?: number; config?: string; episodes?: number; json?: boolean; workers: boolean; rolloutWorkers: number },
    ) => {
      const { evaluate, formatEval } = require('./eval') as typeof import('./eval');
      const info = opts.json ? (line: string) => console.error(line) : log;
      const out = await evaluate(
        { target, step: opts.step, config: opts.config, episodes: opts.episodes },
        { workers: opts.workers, rolloutWorkers: opts.rolloutWorkers, log: info },
      );
      log(opts.json ? JSON.stringify(out, null, 2) : formatEval(out).join('\n'));
    },
  );

program
  .command('export')
  .description(
    'write an HF-format model folder (config.json, model.safetensors, tokenizer files) from a checkpoint of a run; load it with `pretrain: DIR`',
  )
  .argument('<runId>', 'run id (see starpo list)', runIdArgument)
  .option('--step <n>', 'checkpoint step (0 = the step-0 policy); default the newest complete checkpoint', nonNegativeInt)
  .requiredOption('--to <dir>', 'output folder: must not exist or be empty (written to a temp folder, then renamed)')
  .option(
    '--merge',
    "a LoRA run's checkpoint as one HF folder of the merged weights (default: a PEFT adapter folder, its base in DIR/base)",
  )
  .action(async (runId: string, opts: { step?: number; to: string; merge?: boolean }) => {
    const { exportCheckpoint } = require('./export') as typeof import('./export');
    const { ObjectStore } = require('../storage/object_store') as typeof import('../storage/object_store');
    const store = new ObjectStore((await resolveEndpoints({ start: false, log })).s3);
    const out = await exportCheckpoint(store, runId, { step: opts.step, to: opts.to, merge: opts.merge, log });
    log(`exported run ${runId} step ${out.step} (${out.manifestKey}) to ${out.dir}`);
    for (const f of out.files) log(`  ${f.name.padEnd(24)} ${f.bytes.toLocaleString('en-US')} bytes`);
  });

/** Parses a non-negative number option (temperature); a bad value is a usage error (exit 2). */
function nonNegativeNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError(`${JSON.stringify(value)} is not a number >= 0`);
  return n;
}
/** Parses a number in (0, 1] (top_p); a bad value is a usage error (exit 2). */
function unitInterval(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !(n > 0 && n <= 1)) throw new InvalidArgumentError(`${JSON.stringify(value)} is not a number in (0, 1]`);
  return n;
}
/** Parses an integer option (seed); a bad value is a usage error (exit 2). */
function integer(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n)) throw new InvalidArgumentError(`${JSON.stringify(value)} is not an integer`);
  return n;
}

program
  .command('generate')
  .description(
    "a reply from a model (an HF folder, a run's checkpoint or the tiny preset) to a prompt rendered with its own chat template; --score scores a given reply instead",
  )
  .option(
    '--model <dir>',
    'an HF Qwen2 or Llama folder, checked as `config check` checks pretrain (starpo model get prints one), or "tiny" (the preset\'s seeded random init)',
  )
  .option('--run <runId>', "a run's checkpoint (its newest complete one, or --step N), read from the object store", runIdArgument)
  .option('--step <n>', 'with --run: the checkpoint step (0 = the step-0 policy)', nonNegativeInt)
  .option('--prompt <text>', 'the prompt, as one user message')
  .option('--chat <file>', 'the prompt as a chat: a JSON list of {role, content} (system, user, assistant); - reads stdin')
  .option('--score <text>', 'print the log-prob of every token of this reply instead of generating')
  .option('--max-new-tokens <n>', "generating_args.max_new_tokens (default: the run's, else 32)", positiveInt)
  .option('--temperature <t>', "generating_args.temperature (0: greedy; default: the run's, else 0.95)", nonNegativeNumber)
  .option('--top-p <p>', "generating_args.top_p (default: the run's, else 0.7)", unitInterval)
  .option('--top-k <k>', "generating_args.top_k (0: off; default: the run's, else 50)", nonNegativeInt)
  .option('--do-sample', "sample (generating_args.do_sample; default: the run's, else true)")
  .option('--no-do-sample', 'decode greedily')
  .option('--seed <n>', "seed of the sampling stream and of the tiny preset's init", integer, 42)
  .option('--json', 'print the prompt ids, the generated (or scored) ids and their log-probs as JSON')
  .action(
    async (opts: {
      model?: string;
      run?: string;
      step?: number;
      prompt?: string;
      chat?: string;
      score?: string;
      maxNewTokens?: number;
      temperature?: number;
      topP?: number;
      topK?: number;
      doSample?: boolean;
      seed: number;
      json?: boolean;
    }) => {
      const g = require('./generate') as typeof import('./generate');
      const messages = g.readMessages(opts);
      const store = async () => {
        const { ObjectStore } = require('../storage/object_store') as typeof import('../storage/object_store');
        return new ObjectStore((await resolveEndpoints({ start: false, log: (line) => console.error(line) })).s3);
      };
      const loaded = await g.loadModel(opts, store, (line) => console.error(line));
      try {
        const out =
          opts.score !== undefined
            ? g.scoreReply(loaded, messages, opts.score)
            : g.generateReply(
                loaded,
                messages,
                g.generatingArgs(loaded.generating, {
                  max_new_tokens: opts.maxNewTokens,
                  temperature: opts.temperature,
                  top_p: opts.topP,
                  top_k: opts.topK,
                  do_sample: opts.doSample,
                }),
                opts.seed,
              );
        console.error(g.describeRun(out));
        log(opts.json ? JSON.stringify(out, null, 2) : g.formatOutput(out, loaded.tokenizer).join('\n'));
      } finally {
        loaded.model.dispose();
      }
    },
  );

program
  .command('worker')
  .description('run workers of one role against TEMPORAL_ADDRESS / S3_ENDPOINT (or the local infra)')
  .addOption(new Option('--role <role>', 'which task queues to poll').choices([...ROLES]).default('all'))
  .addOption(backendOption())
  .action(async (opts: { role: Role; backend?: string }) => {
    useBackend(opts.backend);
    const { runWorkers } = require('../workers/run') as typeof import('../workers/run');
    await runWorkers(opts.role, await resolveEndpoints({ start: false, log }), log);
  });

program
  .command('run-json')
  .description('write the workflow input for `temporal workflow start --input-file` from a YAML config')
  .argument('<config>', CONFIG_HELP)
  .argument('[overrides...]', OVERRIDES_HELP)
  .option('-o, --output <file>', 'output file', 'run.json')
  .option('--run-id <id>', 'run id (also the workflow id)', runIdArgument)
  .action((path: string, overrides: string[], opts: { output: string; runId?: string }) => {
    const file = checkOutputFile('-o', opts.output);
    const { input } = runInputFromFile(path, opts.runId, overrides);
    writeFileAtomically(file, JSON.stringify(input, null, 2));
    log(`wrote ${opts.output} (run id ${input.runId})`);
  });

const config = program.command('config').description('config files (Hydra defaults lists and ${...} interpolations resolved)');
config
  .command('check')
  .argument('<file>', CONFIG_HELP)
  .argument('[overrides...]', OVERRIDES_HELP)
  .description('validate only (and ask the env servers it names whether they answer)')
  .action(async (path: string, overrides: string[]) => {
    const loaded = loadConfigFile(path, overrides);
    await refuseUnreachableEnvServers(loaded.config);
    log(`${path}: ok`);
    acceptedNotes(loaded).forEach(log);
  });
config
  .command('print')
  .argument('<file>', CONFIG_HELP)
  .argument('[overrides...]', OVERRIDES_HELP)
  .description('print the resolved config as YAML, defaults applied (ignored keys and variables on stderr)')
  .action((path: string, overrides: string[]) => {
    const loaded = loadConfigFile(path, overrides);
    process.stdout.write(stringify(loaded.config));
    acceptedNotes(loaded).forEach((line) => console.error(line));
  });

/** A Temporal client for the servers in use (never starts them). */
async function client() {
  return (await servers(false)).client;
}

/** A Temporal client and the object store of the servers in use; `start` starts local ones when none run. */
async function servers(start: boolean) {
  const { connectClient } = require('./train') as typeof import('./train');
  const { ObjectStore } = require('../storage/object_store') as typeof import('../storage/object_store');
  const e = await resolveEndpoints({ start, log });
  return { client: await connectClient(e), store: new ObjectStore(e.s3) };
}

program
  .command('status')
  .description(
    "a run's phase, step, last metrics, validation and checkpoint (its `progress` query, or its result once closed); of a sweep, a table of its runs",
  )
  .argument('<id>', 'a run id or a sweep id')
  .option('--json', 'print everything as JSON (runs)')
  .action(async (runId: string, opts: { json?: boolean }) => {
    const { formatStatus, runStatus } = require('./operate') as typeof import('./operate');
    const sweeps = require('./sweep_status') as typeof import('./sweep_status');
    const s = await servers(false);
    if (await sweeps.isSweep(s.client, s.store, runId)) {
      log((await sweeps.sweepStatus(s.client, s.store, runId)).join('\n'));
      return;
    }
    const status = await runStatus(s.client, runId);
    log(opts.json ? JSON.stringify(status, null, 2) : formatStatus(status).join('\n'));
  });

for (const [action, description] of [
  [
    'pause',
    'pause a running run after the step in flight (its checkpoint is written first); of a sweep, its running runs and its start of new ones',
  ],
  ['unpause', 'continue a paused run or sweep'],
  [
    'stop',
    'finish the step in flight, run the final validation (eval_steps > 0) and complete the run; a sweep stops its running runs and starts no more',
  ],
] as const) {
  const command = program.command(action).description(description).argument('<id>', 'a run id or a sweep id');
  if (action === 'stop') command.option('--reason <text>', 'why (in the result: stoppedBy "stop: <text>")');
  command.action(async (runId: string, opts: { reason?: string }) => {
    const { describeReply, sendControl } = require('./operate') as typeof import('./operate');
    const sweeps = require('./sweep_status') as typeof import('./sweep_status');
    const s = await servers(false);
    if (await sweeps.isSweep(s.client, s.store, runId)) log(await sweeps.sendSweepControl(s.client, runId, action, opts.reason));
    else log(describeReply(runId, action, await sendControl(s.client, runId, action, opts.reason)));
  });
}

program
  .command('list')
  .description('runs (workflows of type starpoTraining), newest first: run id, status, step, config, validation success')
  .option('--query <filter>', 'a Temporal list filter ANDed to it, e.g. \'StarpoConfig = "frozen_lake" AND ExecutionStatus = "Running"\'')
  .option('--limit <n>', 'at most this many runs', positiveInt, 50)
  .option('--json', 'print the rows as JSON')
  .action(async (opts: { query?: string; limit: number; json?: boolean }) => {
    const { formatRuns, listRuns } = require('./operate') as typeof import('./operate');
    const rows = await listRuns(await client(), opts);
    log(opts.json ? JSON.stringify(rows, null, 2) : formatRuns(rows).join('\n'));
  });

registerInfraCommands(program);
registerReportCommands(program);
registerTrackCommand(program);
registerSweepCommands(program);
registerBackendCommands(program);
registerModelCommands(program);
registerEnvCommands(program);
addClusterOptions(program);
applyHelp(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2); // commander printed the message
  const verbose = program.opts().verbose === true;
  console.error(verbose && err instanceof Error ? err.stack : `error: ${errorMessage(err)}`);
  process.exit(exitCodeOf(err));
});
