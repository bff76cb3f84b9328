/**
 * `starpo infra up|down|status|env`. Wired into the `starpo` command by src/cli/main.ts.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { resolveCacheDir, TEMPORAL_BINARY } from './binaries';
import { endpointsToEnv, s3Url } from './env';
import { InfraUnavailableError } from './errors';
import { cachedBinary } from './install';
import { infraDown, infraStatus, infraUp } from './lifecycle';
import type { InfraEndpoints } from './types';

/** Stands for a secret in what infra commands print. */
const HIDDEN = '(hidden)';

/**
 * The endpoints as printed: the keys of the local servers (generated here, needed by other hosts and tools)
 * are shown; the secrets of external servers (S3 secret key and session token, Temporal API key and TLS
 * files) are not, whatever asks for them.
 */
export function printableEndpoints(e: InfraEndpoints): InfraEndpoints {
  if (e.managed) return e;
  const s3 = { ...e.s3, secretKey: HIDDEN, ...(e.s3.sessionToken ? { sessionToken: HIDDEN } : {}) };
  const auth = e.temporalAuth;
  const temporalAuth = auth && {
    ...(auth.tls !== undefined ? { tls: auth.tls !== false } : {}),
    ...(auth.apiKey !== undefined ? { apiKey: HIDDEN } : {}),
    ...(auth.metadata ? { metadata: Object.fromEntries(Object.keys(auth.metadata).map((k) => [k, HIDDEN])) } : {}),
  };
  return { ...e, s3, ...(temporalAuth ? { temporalAuth } : {}) };
}

/** Readable lines for endpoints; the S3 secret key is printed for the local servers only (printableEndpoints). */
function describe(endpoints: InfraEndpoints): string {
  const e = printableEndpoints(endpoints);
  const s3url = s3Url(e.s3);
  const auth = [e.temporalAuth?.tls ? 'TLS' : '', e.temporalAuth?.apiKey ? 'API key' : ''].filter(Boolean).join(', ');
  return [
    `Temporal:  ${e.temporalAddress} (namespace ${e.temporalNamespace}${auth ? `; ${auth}` : ''})${e.managed ? '' : ' [from environment]'}`,
    ...(e.temporalUiUrl ? [`UI:        ${e.temporalUiUrl}`] : []),
    `S3:        ${s3url} bucket ${e.s3.bucket}${e.managed ? '' : ' [from environment]'}`,
    `S3 keys:   ${e.s3.accessKey} / ${e.s3.secretKey}`,
    '',
    'Environment for other hosts/tools (this shell: eval "$(npx starpo infra env)"):',
    `  TEMPORAL_ADDRESS=${e.temporalAddress} S3_ENDPOINT=${s3url} S3_ACCESS_KEY=${e.s3.accessKey} S3_SECRET_KEY=${e.s3.secretKey} S3_BUCKET=${e.s3.bucket}`,
  ].join('\n');
}

/** Quotes a value for a POSIX shell when it holds anything but plain characters. */
function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;
}

/**
 * `infra env`: shell lines that point the `temporal` CLI (it reads TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE),
 * starpo and other tools at the servers as they run, whatever ports they took, and put the installed
 * `temporal` on PATH. For servers from the environment the secrets are left out (the shell has them).
 */
export function envLines(e: InfraEndpoints, temporalBin: string | null): string[] {
  const vars = Object.entries(endpointsToEnv(e)).filter(([k]) => e.managed || (k !== 'S3_SECRET_KEY' && k !== 'S3_SESSION_TOKEN'));
  return [
    ...vars.map(([k, v]) => `export ${k}=${shellWord(v)}`),
    ...(temporalBin ? [`export PATH=${shellWord(dirname(temporalBin))}:"$PATH"`] : []),
  ];
}

/** `--state-dir`: a folder, created when missing; a file there is a usage error (exit 2) before anything starts. */
function stateDirArgument(value: string): string {
  if (existsSync(value) && !statSync(value).isDirectory())
    throw new InvalidArgumentError('it is a file; allowed: a folder (created when missing)');
  return value;
}

/** Common options of the infra subcommands. */
interface InfraCliOptions {
  json?: boolean;
  stateDir?: string;
}

/**
 * Adds `infra up`, `infra down` and `infra status` to `program`. Each accepts `--json` (machine-readable
 * output on stdout) and `--state-dir <dir>`; progress lines go to stderr. Errors propagate to the
 * starpo command's handler: exit code 3 (InfraUnavailableError, InfraStartError) or 2 (InfraConfigError).
 */
export function registerInfraCommands(program: Command): void {
  const infra = program.command('infra').description('local Temporal dev server and S3 server on 127.0.0.1');
  const log = (line: string) => process.stderr.write(`[infra] ${line}\n`);
  infra
    .command('up')
    .description('install (once) and start the servers, or reuse running ones; prints the endpoints')
    .option('--json', 'print endpoints as JSON')
    .option('--state-dir <dir>', 'state folder (default <repo>/.starpo/infra or STARPO_STATE_DIR)', stateDirArgument)
    .action(async (o: InfraCliOptions) => {
      const t0 = Date.now();
      const e = await infraUp({ stateDir: o.stateDir, log });
      if (o.json) process.stdout.write(`${JSON.stringify(printableEndpoints(e), null, 2)}\n`);
      else process.stdout.write(`${describe(e)}\nready in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    });
  infra
    .command('down')
    .description('stop the servers infra up started (data is kept)')
    .option('--json', 'print {"stopped": true} as JSON')
    .option('--state-dir <dir>', 'state folder', stateDirArgument)
    .action(async (o: InfraCliOptions) => {
      await infraDown({ stateDir: o.stateDir, log });
      process.stdout.write(o.json ? '{"stopped":true}\n' : 'infra stopped\n');
    });
  infra
    .command('env')
    .description('print `export` lines for the running servers (eval "$(starpo infra env)"; the temporal CLI reads them)')
    .option('--state-dir <dir>', 'state folder', stateDirArgument)
    .action(async (o: InfraCliOptions) => {
      const s = await infraStatus({ stateDir: o.stateDir });
      if (!s.endpoints || !s.running)
        throw new InfraUnavailableError('the servers are not running; start them with: starpo infra up', { hint: false });
      process.stdout.write(`${envLines(s.endpoints, cachedBinary(resolveCacheDir(), TEMPORAL_BINARY)).join('\n')}\n`);
    });
  infra
    .command('status')
    .description('show whether the servers run, with pids, ports and endpoints')
    .option('--json', 'print status as JSON')
    .option('--state-dir <dir>', 'state folder', stateDirArgument)
    .action(async (o: InfraCliOptions) => {
      const s = await infraStatus({ stateDir: o.stateDir });
      if (o.json) {
        process.stdout.write(`${JSON.stringify({ ...s, endpoints: s.endpoints && printableEndpoints(s.endpoints) }, null, 2)}\n`);
        return;
      }
      const rows = s.processes.map(
        (p) => `  ${p.name.padEnd(10)} pid ${String(p.pid).padEnd(8)} port ${String(p.port).padEnd(6)} ${p.alive ? 'alive' : 'DEAD'}`,
      );
      process.stdout.write(`infra ${s.running ? 'running' : 'not running'}\n${rows.join('\n')}${rows.length ? '\n' : ''}`);
      if (s.endpoints) process.stdout.write(`${describe(s.endpoints)}\n`);
    });
}
