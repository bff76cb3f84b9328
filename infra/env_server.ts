/**
 * A Python env served by the bridge (python/starpo_envs) as a child process of this one: `starpo env serve`, the
 * tests and benches start one with startEnvServer and talk to it over OpenEnv's protocol at the URL it returns.
 */

import { BRIDGE_PYTHON_DIR, ENV_VENV, ensureVenv } from './env_venv';
import { InfraConfigError, InfraStartError } from './errors';
import { freePort } from './ports';
import { spawnTied } from './tied_process';

/** The specs the bridge serves (python/starpo_envs/specs.py says the same). */
export const ENV_SPECS_HELP =
  "gymnasium:FrozenLake-v1 (Gymnasium's FrozenLake on starpo's maps), reasoning_gym:<dataset> (e.g. reasoning_gym:basic_arithmetic), " +
  'gem:<GEM env id> (e.g. gem:game:GuessTheNumber-v0-easy), <module or file.py>:<Class> (a text env class of your own, docs/envs.md "Your env in Python")';
const SPEC = /^(gem:[A-Za-z0-9_-]+:|[^:\s]+:)[A-Za-z0-9_.-]+$/;

/** Checks the form of a spec (<family or module>:<name>, GEM's ids have a family of their own); the bridge itself checks what it names. */
export function checkEnvSpec(spec: string): void {
  if (!SPEC.test(spec))
    throw new InfraConfigError(`env spec ${JSON.stringify(spec)} is not one the bridge serves; allowed: ${ENV_SPECS_HELP}`);
}

/** A running bridge server. */
export interface EnvServer {
  /** http://127.0.0.1:<port>: GET /health, WebSocket sessions at /ws. */
  url: string;
  /** Its exit code (null when a signal ended it), once it has exited. */
  exited: Promise<number | null>;
  /** SIGTERM (SIGKILL after 5 s); resolves once it has exited. */
  stop(): Promise<void>;
}

/** Options of startEnvServer. */
export interface EnvServerOptions {
  /** Default: a free port. */
  port?: number;
  /** The env's config (for FrozenLake the keys of starpo's frozen_lake env_config). */
  config?: Record<string, unknown>;
  /** WebSocket sessions (episodes) at once; the bridge's default is 64. */
  maxSessions?: number;
  cacheDir?: string;
  log?: (line: string) => void;
  /** Every chunk of the server's stdout and stderr (default: kept only for error messages). */
  onOutput?: (text: string) => void;
  /** The longest wait for /health after the start (default 120 s: reasoning-gym alone imports for seconds). */
  startupTimeoutSeconds?: number;
}

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/**
 * Starts `python -m starpo_envs <spec>` on 127.0.0.1 (making the bridge's venv first when needed) and waits
 * until its /health answers. The server stops when this process ends, however it ends (spawnTied).
 * @throws InfraConfigError (exit 2) for a spec or config the bridge refuses, with its message; InfraStartError
 *   (exit 3) when it exits otherwise or does not answer in time, with the tail of its output
 */
export async function startEnvServer(spec: string, opts: EnvServerOptions = {}): Promise<EnvServer> {
  checkEnvSpec(spec);
  const log = opts.log ?? (() => {});
  const python = await ensureVenv(ENV_VENV, { cacheDir: opts.cacheDir, log });
  const port = opts.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const args = ['-m', 'starpo_envs', spec, '--host', '127.0.0.1', '--port', String(port), '--config', JSON.stringify(opts.config ?? {})];
  if (opts.maxSessions !== undefined) args.push('--max-sessions', String(opts.maxSessions));
  const pythonPath = [BRIDGE_PYTHON_DIR, process.env.PYTHONPATH].filter(Boolean).join(':');
  const child = spawnTied(python, args, { env: { ...process.env, PYTHONPATH: pythonPath, PYTHONUNBUFFERED: '1' }, output: 'pipe' });
  let tail = '';
  const keep = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    tail = (tail + text).slice(-4000);
    opts.onOutput?.(text);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => {
    child.once('error', (err) => {
      tail += `\n${String(err)}`;
      resolve(null);
    });
    child.once('close', (code) => resolve(code));
  });
  let code: number | null | undefined;
  void exited.then((c) => {
    code = c;
  });
  const stop = async () => {
    if (code !== undefined) return;
    child.ref(); // spawnTied unrefs the child; waiting for its exit must keep this process alive
    child.kill('SIGTERM'); // the watchdog stops the server's group, SIGKILL after 5 s
    await exited;
  };
  const deadline = Date.now() + (opts.startupTimeoutSeconds ?? 120) * 1000;
  while (!(await healthy(url))) {
    if (code !== undefined) {
      const message = `env server ${spec} exited (code ${code}) before ${url}/health answered:\n${tail.trim()}`;
      throw code === 2 ? new InfraConfigError(message) : new InfraStartError(message);
    }
    if (Date.now() > deadline) {
      await stop();
      throw new InfraStartError(
        `env server ${spec}: ${url}/health did not answer within ${opts.startupTimeoutSeconds ?? 120} s:\n${tail.trim()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, exited, stop };
}
