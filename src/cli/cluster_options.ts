/**
 * `--profile` and `--namespace`, on every command that reaches the servers. They set TEMPORAL_PROFILE and
 * TEMPORAL_NAMESPACE before the command runs, so this process (infra/temporal_profile.ts) and the workers
 * it spawns, which inherit its environment, connect to the same cluster the same way.
 */
import { type Command, InvalidArgumentError } from 'commander';

/** The commands (by name, below the program) that connect to Temporal or S3. */
const CLUSTER_COMMANDS = new Set([
  'train',
  'resume',
  'eval',
  'export',
  'generate',
  'worker',
  'status',
  'pause',
  'unpause',
  'stop',
  'list',
  'report',
  'trajectories',
]);

/** A non-empty name; a blank one is a usage error (exit 2). */
function name(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError(`${JSON.stringify(value)} is empty`);
  return value.trim();
}

/** Adds the two options to the cluster commands of `program` and applies them before any action. */
export function addClusterOptions(program: Command): void {
  for (const cmd of program.commands) {
    if (!CLUSTER_COMMANDS.has(cmd.name())) continue;
    cmd
      .option(
        '--profile <name>',
        'Temporal profile (address, namespace, TLS, API key) of TEMPORAL_CONFIG_FILE, default ~/.config/temporalio/temporal.toml (default: TEMPORAL_PROFILE, else "default")',
        name,
      )
      .option('--namespace <namespace>', 'Temporal namespace (default: TEMPORAL_NAMESPACE, else the profile\'s, else "default")', name);
  }
  program.hook('preAction', (_program, action) => {
    const { profile, namespace } = action.opts() as { profile?: string; namespace?: string };
    if (profile) process.env.TEMPORAL_PROFILE = profile;
    if (namespace) process.env.TEMPORAL_NAMESPACE = namespace;
  });
}
