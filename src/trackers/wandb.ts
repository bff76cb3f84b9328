/**
 * A run's W&B run, written by W&B's own Python client (python/starpo_wandb.py, in the venv of
 * python/wandb_requirements.txt made on first use): offline by default, so the run files under
 * `<log_dir>/<runId>/wandb/` (a sweep's under `<log_dir>/<sweepId>/<runId>/`) are for `wandb sync`; WANDB_MODE
 * from the environment wins. The run files are the cursor, read back with W&B's reader: only the stored steps
 * above the highest step they hold are logged, so every step is in them once. One writer per folder at a time.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { BRIDGE_PYTHON_DIR, ensureVenv, WANDB_VENV } from '../../infra/env_venv';
import type { RunSpec } from '../contract';
import type { ObjectStore } from '../storage/object_store';
import { readMetrics, type StoredStep } from '../storage/run_metrics';

const SCRIPT = path.join(BRIDGE_PYTHON_DIR, 'starpo_wandb.py');

/** What the W&B side holds after a call. */
export interface WandbOutcome {
  written: number[];
  lastStep: number;
}

/** Runs the script with `input` on stdin; @returns its last line of stdout, parsed. @throws Error with its output's tail when it fails */
function runScript<T>(python: string, args: string[], input: string, env: NodeJS.ProcessEnv = process.env): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [SCRIPT, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err = (err + chunk.toString('utf8')).slice(-2000);
    });
    child.once('error', reject);
    child.once('close', (code) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      if (code === 0) resolve(JSON.parse(last) as T);
      else reject(new Error(`W&B writer ${args[0] ?? ''} exited ${code}: ${(err || out).trim().slice(-1000)}`));
    });
    child.stdin.end(input);
  });
}

/** wandb.init's arguments as ROLL's WandbTracker passes tracker_kwargs, with the run id as W&B's id. */
function initOf(spec: RunSpec, sweepId: string | null): Record<string, unknown> {
  const { api_key: _key, ...kept } = spec.config.tracker_kwargs;
  const { project, name, notes, tags } = kept;
  return {
    project: project ?? sweepId ?? spec.config.exp_name,
    group: sweepId ?? undefined,
    // a sweep's runs share the config's name; the run id tells them apart
    name: sweepId === null ? (name ?? spec.runId) : spec.runId,
    notes,
    tags,
    // the resolved config, without the key
    config: { ...spec.config, tracker_kwargs: kept },
  };
}

/**
 * Logs the stored steps the run's W&B files lack into `dir` (runLogDir).
 * @param stored the run's stored steps, ascending
 * @throws InfraUnavailableError when the venv cannot be made; Error when the writer fails
 */
export async function writeWandb(
  store: ObjectStore,
  spec: RunSpec,
  stored: StoredStep[],
  sweepId: string | null,
  dir: string,
): Promise<WandbOutcome> {
  const python = await ensureVenv(WANDB_VENV, { log: (line) => console.error(line) });
  const { lastStep } = await runScript<{ lastStep: number }>(python, ['last', dir, spec.runId], '');
  const todo = stored.filter((s) => s.step > lastStep);
  if (todo.length === 0) return { written: [], lastStep };
  const metrics = await readMetrics(
    store,
    spec.runId,
    todo.map((s) => s.step),
  );
  const steps = metrics.map((m, i) => ({
    step: m.step,
    metrics: m.metrics,
    wallTime: (todo[i]?.lastModified?.getTime() ?? Date.now()) / 1000,
  }));
  const payload = { dir, run_id: spec.runId, init: initOf(spec, sweepId), steps };
  // as ROLL's tracker logs in with it; only online mode uses a key
  const apiKey = spec.config.tracker_kwargs.api_key;
  const env = apiKey === undefined ? process.env : { ...process.env, WANDB_API_KEY: apiKey };
  return runScript<WandbOutcome>(python, ['log'], JSON.stringify(payload), env);
}
