/**
 * A real MLflow tracking server for a test: `mlflow server` from the PyPI package pinned in
 * test/fixtures/mlflow/requirements.txt (venv ~/.cache/starpo/mlflow-venv, made on first use), on 127.0.0.1
 * at a free port, with a temporary SQLite backend store and artifact folder, artifacts served through the
 * server (--serve-artifacts, its default). It can be stopped and started again on the same port and store,
 * as a tracker that goes down and comes back. Also what a test reads back over the REST API.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../infra/ports';
import type { MlflowClient, MlflowMetric, MlflowRun } from '../../src/trackers/mlflow_client';
import { venvBin } from './pypi_venv';

/** A server a test started. */
export interface MlflowTestServer {
  uri: string;
  /** Stops it (the whole process group: uvicorn and its workers); the store stays. */
  stop(): Promise<void>;
  /** Starts it again on the same port and store. */
  start(): Promise<void>;
  /** Stops it and removes its store. */
  close(): Promise<void>;
}

const STARTUP_SECONDS = 180;

/** Starts a server. */
export async function startMlflowServer(): Promise<MlflowTestServer> {
  const bin = venvBin('mlflow-venv', join(__dirname, '../fixtures/mlflow/requirements.txt'), 'mlflow');
  const dir = mkdtempSync(join(tmpdir(), 'starpo-mlflow-'));
  const port = await freePort();
  const uri = `http://127.0.0.1:${port}`;
  const logFile = join(dir, 'server.log');
  let child: ChildProcess | null = null;

  const start = async () => {
    const args = ['server', '--host', '127.0.0.1', '--port', String(port), '--workers', '1'];
    args.push('--backend-store-uri', `sqlite:///${join(dir, 'mlflow.db')}`, '--artifacts-destination', join(dir, 'artifacts'));
    // Its background job runners (for GenAI evaluation) are not needed here and take a process each.
    const env = { ...process.env, MLFLOW_SERVER_ENABLE_JOB_EXECUTION: 'false' };
    const out = openSync(logFile, 'a');
    const c = spawn(join(bin, 'mlflow'), args, { detached: true, stdio: ['ignore', out, out], env });
    child = c;
    const deadline = Date.now() + STARTUP_SECONDS * 1000;
    for (;;) {
      if (c.exitCode !== null) throw new Error(`mlflow server exited (${c.exitCode}): ${readFileSync(logFile, 'utf8').slice(-2000)}`);
      const ok = await fetch(`${uri}/health`)
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) return;
      if (Date.now() > deadline)
        throw new Error(`mlflow server not up after ${STARTUP_SECONDS} s: ${readFileSync(logFile, 'utf8').slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  const stop = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null || c.pid === undefined) return;
    const exited = new Promise((r) => c.once('exit', r));
    process.kill(-c.pid, 'SIGTERM');
    const timer = setTimeout(() => c.pid !== undefined && process.kill(-c.pid, 'SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };

  await start();
  return {
    uri,
    stop,
    start,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Every value of metric `key` of a run (get-history, all pages), as the server holds them. */
export async function metricHistory(client: MlflowClient, runId: string, key: string): Promise<MlflowMetric[]> {
  const out: MlflowMetric[] = [];
  let token = '';
  do {
    const q = new URLSearchParams({ run_id: runId, metric_key: key, max_results: '25000', ...(token ? { page_token: token } : {}) });
    const page = await client.request<{ metrics?: MlflowMetric[]; next_page_token?: string }>(
      'GET',
      `/api/2.0/mlflow/metrics/get-history?${q}`,
    );
    out.push(...(page.metrics ?? []).map((m) => ({ ...m, timestamp: Number(m.timestamp), step: Number(m.step ?? 0) })));
    token = page.next_page_token ?? '';
  } while (token);
  return out;
}

/** The metric keys a run has (its latest values). */
export function metricKeys(run: MlflowRun & { data: { metrics?: Array<{ key: string }> } }): string[] {
  return (run.data.metrics ?? []).map((m) => m.key).sort();
}

/** An artifact's text, downloaded through the server's artifact proxy. */
export async function artifactText(client: MlflowClient, run: MlflowRun, file: string): Promise<string> {
  const res = await fetch(`${client.server.uri}${client.artifactPath(run, file)}`, { headers: client.server.headers });
  if (!res.ok) throw new Error(`artifact ${file}: ${res.status} ${await res.text()}`);
  return res.text();
}
