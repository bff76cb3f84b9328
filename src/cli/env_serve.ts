/**
 * `starpo env serve <spec>` (docs/envs.md, "Your env in Python"): a Python env served over OpenEnv's protocol by
 * the bridge (python/starpo_envs), in the foreground on 127.0.0.1, for a config's `env_type: openenv` to name by
 * its URL. The first use makes the bridge's venv (infra/env_venv.ts). Stops on Ctrl-C or SIGTERM.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { checkEnvSpec, ENV_SPECS_HELP } from '../../infra/env_server';

const log = (line: string) => process.stderr.write(`[env] ${line}\n`);

/** A spec the bridge serves; else a usage error (exit 2) naming what is allowed. */
function specArgument(value: string): string {
  try {
    checkEnvSpec(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return value;
}

/** `--config`: a JSON object; else a usage error (exit 2). */
function configArgument(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new InvalidArgumentError(`${JSON.stringify(value)} is not a JSON object; allowed: e.g. '{"format_penalty": -0.01}'`);
  return parsed as Record<string, unknown>;
}

/** An integer in [1, max]; else a usage error (exit 2) naming the option. */
const intArgument =
  (name: string, max: number) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > max)
      throw new InvalidArgumentError(`${name} ${JSON.stringify(value)} is not an integer in [1, ${max}]`);
    return n;
  };

/** Adds `env serve` to `program`. */
export function registerEnvCommands(program: Command): void {
  const env = program.command('env').description("envs written in Python, served over OpenEnv's protocol for `env_type: openenv`");
  env
    .command('serve')
    .description(
      "serve a Python env on 127.0.0.1 in the foreground (making the bridge's venv from PyPI on first use) and print its URL, the `env_config.url` of an openenv tag",
    )
    .argument('<spec>', ENV_SPECS_HELP, specArgument)
    .option('--port <port>', 'the port (default: a free one)', intArgument('--port', 65535))
    .option(
      '--max-sessions <n>',
      'episodes played at once (default 64; a run needs one per env of its groups)',
      intArgument('--max-sessions', 100_000),
    )
    .option('--config <json>', "the env's config as a JSON object (FrozenLake: the keys of frozen_lake's env_config)", configArgument)
    .action(async (spec: string, opts: { port?: number; maxSessions?: number; config?: Record<string, unknown> }) => {
      const { startEnvServer } = require('../../infra/env_server') as typeof import('../../infra/env_server');
      const server = await startEnvServer(spec, { ...opts, log, onOutput: (text) => process.stderr.write(text) });
      process.stdout.write(`${server.url}\n`);
      let stopping = false;
      for (const signal of ['SIGINT', 'SIGTERM'] as const) {
        process.once(signal, () => {
          stopping = true;
          void server.stop();
        });
      }
      const code = await server.exited;
      // Asked to stop, the server's own exit code says nothing (uvicorn may exit 1 with a session mid-close).
      if (!stopping && code !== 0) throw new Error(`the env server ${spec} exited with code ${code}`);
    });
}
