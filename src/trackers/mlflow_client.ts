/**
 * MLflow's REST API over fetch: the tracking server's /api/2.0/mlflow/ endpoints and its artifact proxy
 * (/api/2.0/mlflow-artifacts/, `mlflow server --serve-artifacts`, the default since MLflow 2). npm has no
 * client MLflow maintains for runs and metrics (its JS package covers tracing only), so this is the part
 * of the API the tracker uses. The server and its credentials come as MLflow's own clients take them:
 * MLFLOW_TRACKING_URI, MLFLOW_TRACKING_TOKEN (bearer), or MLFLOW_TRACKING_USERNAME and _PASSWORD (basic).
 */

/** MLflow's limits on one log-batch request and on a param (mlflow/utils/validation.py). */
export const MLFLOW_LIMITS = { metricsPerBatch: 1000, paramsTagsPerBatch: 100, paramValue: 6000, key: 250, tagValue: 8000 };

/** One request's bound: a server that does not answer costs the tracker this, never the run. */
const REQUEST_SECONDS = 20;

/** Where the server is and how to authenticate. */
export interface MlflowServer {
  uri: string;
  headers: Record<string, string>;
}

/** An error answer of the server (its error_code, e.g. RESOURCE_DOES_NOT_EXIST), or no answer. */
export class MlflowError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
  ) {
    super(message);
    this.name = 'MlflowError';
  }
}

/**
 * The server: `trackingUri` (tracker_kwargs.tracking_uri) or MLFLOW_TRACKING_URI, with MLflow's auth variables.
 * @throws Error naming what is missing or not allowed
 */
export function mlflowServer(trackingUri: string | undefined, env: NodeJS.ProcessEnv = process.env): MlflowServer {
  const uri = trackingUri ?? env.MLFLOW_TRACKING_URI;
  if (!uri)
    throw new Error(
      'track_with mlflow needs the server: tracker_kwargs.tracking_uri, or MLFLOW_TRACKING_URI in the environment of the control worker (or of `starpo track`)',
    );
  if (!/^https?:\/\//.test(uri))
    throw new Error(`MLflow tracking URI ${JSON.stringify(uri)}: allowed: an http:// or https:// URL of an MLflow server`);
  const headers: Record<string, string> = {};
  if (env.MLFLOW_TRACKING_TOKEN) headers.authorization = `Bearer ${env.MLFLOW_TRACKING_TOKEN}`;
  else if (env.MLFLOW_TRACKING_USERNAME && env.MLFLOW_TRACKING_PASSWORD)
    headers.authorization = `Basic ${Buffer.from(`${env.MLFLOW_TRACKING_USERNAME}:${env.MLFLOW_TRACKING_PASSWORD}`).toString('base64')}`;
  return { uri: uri.replace(/\/+$/, ''), headers };
}

/** A run as the server describes it (the fields used here). */
export interface MlflowRun {
  info: { run_id: string; experiment_id: string; status: string; start_time?: number | string; artifact_uri: string };
  data: { tags?: Array<{ key: string; value: string }>; params?: Array<{ key: string; value: string }> };
}

/** One metric value as log-batch takes it (timestamp: ms since the epoch). */
export interface MlflowMetric {
  key: string;
  value: number;
  timestamp: number;
  step: number;
}

/** A key and a value (a param or a tag). */
export interface MlflowPair {
  key: string;
  value: string;
}

/** The calls the tracker makes, on one server. */
export class MlflowClient {
  constructor(readonly server: MlflowServer) {}

  /**
   * One request; a JSON body is sent as JSON, a string or bytes as they are.
   * @throws MlflowError for an error answer, a network failure or a timeout
   */
  async request<T>(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<T> {
    const url = `${this.server.uri}${path}`;
    const headers: Record<string, string> = { ...this.server.headers };
    let payload: string | Uint8Array | undefined;
    if (body !== undefined) {
      headers['content-type'] = contentType;
      payload = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
    }
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body: payload, signal: AbortSignal.timeout(REQUEST_SECONDS * 1000) });
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
      throw new MlflowError(`MLflow ${method} ${url}: no answer (${cause})`, 0, 'UNREACHABLE');
    }
    const text = await res.text();
    if (!res.ok) {
      let code = `HTTP_${res.status}`;
      let message = text.slice(0, 300);
      try {
        const e = JSON.parse(text) as { error_code?: string; message?: string };
        code = e.error_code ?? code;
        message = e.message ?? message;
      } catch {}
      throw new MlflowError(`MLflow ${method} ${path}: ${res.status} ${code}: ${message}`, res.status, code);
    }
    return (text ? JSON.parse(text) : {}) as T;
  }

  /** The id of experiment `name`, created when missing. @throws Error when it is deleted */
  async experimentId(name: string): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      try {
        const { experiment } = await this.request<{ experiment: { experiment_id: string; lifecycle_stage: string } }>(
          'GET',
          `/api/2.0/mlflow/experiments/get-by-name?experiment_name=${encodeURIComponent(name)}`,
        );
        if (experiment.lifecycle_stage !== 'active')
          throw new Error(
            `MLflow experiment ${JSON.stringify(name)} is deleted; restore it (mlflow experiments restore) or name another (tracker_kwargs.project)`,
          );
        return experiment.experiment_id;
      } catch (err) {
        if (!(err instanceof MlflowError) || err.code !== 'RESOURCE_DOES_NOT_EXIST') throw err;
      }
      try {
        // MLflow 3's UI opens an experiment of this kind on its training runs and charts (not the GenAI views).
        const tags = [{ key: 'mlflow.experimentKind', value: 'custom_model_development' }];
        return (await this.request<{ experiment_id: string }>('POST', '/api/2.0/mlflow/experiments/create', { name, tags })).experiment_id;
      } catch (err) {
        // Another writer created it between the two calls: read it again, once.
        if (!(err instanceof MlflowError) || err.code !== 'RESOURCE_ALREADY_EXISTS' || attempt > 0) throw err;
      }
    }
  }

  /** The active runs of an experiment whose tag `key` is `value`, oldest first. */
  async runsTagged(experimentId: string, key: string, value: string): Promise<MlflowRun[]> {
    const { runs } = await this.request<{ runs?: MlflowRun[] }>('POST', '/api/2.0/mlflow/runs/search', {
      experiment_ids: [experimentId],
      filter: `tags.\`${key}\` = '${value.replace(/'/g, "\\'")}'`,
      order_by: ['attributes.start_time ASC'],
      max_results: 100,
    });
    return runs ?? [];
  }

  /** A new run (status RUNNING). */
  async createRun(experimentId: string, runName: string, tags: MlflowPair[]): Promise<MlflowRun> {
    const body = { experiment_id: experimentId, run_name: runName, start_time: Date.now(), tags };
    return (await this.request<{ run: MlflowRun }>('POST', '/api/2.0/mlflow/runs/create', body)).run;
  }

  async getRun(runId: string): Promise<MlflowRun> {
    return (await this.request<{ run: MlflowRun }>('GET', `/api/2.0/mlflow/runs/get?run_id=${encodeURIComponent(runId)}`)).run;
  }

  async deleteRun(runId: string): Promise<void> {
    await this.request('POST', '/api/2.0/mlflow/runs/delete', { run_id: runId });
  }

  /** Logs metrics, params and tags in as many log-batch requests as MLflow's limits ask, in their order. */
  async logBatch(runId: string, batch: { metrics?: MlflowMetric[]; params?: MlflowPair[]; tags?: MlflowPair[] }): Promise<void> {
    const metrics = batch.metrics ?? [];
    const params = batch.params ?? [];
    const tags = batch.tags ?? [];
    for (let i = 0; i < metrics.length; i += MLFLOW_LIMITS.metricsPerBatch)
      await this.request('POST', '/api/2.0/mlflow/runs/log-batch', {
        run_id: runId,
        metrics: metrics.slice(i, i + MLFLOW_LIMITS.metricsPerBatch),
      });
    for (let i = 0; i < params.length; i += MLFLOW_LIMITS.paramsTagsPerBatch)
      await this.request('POST', '/api/2.0/mlflow/runs/log-batch', {
        run_id: runId,
        params: params.slice(i, i + MLFLOW_LIMITS.paramsTagsPerBatch),
      });
    for (let i = 0; i < tags.length; i += MLFLOW_LIMITS.paramsTagsPerBatch)
      await this.request('POST', '/api/2.0/mlflow/runs/log-batch', {
        run_id: runId,
        tags: tags.slice(i, i + MLFLOW_LIMITS.paramsTagsPerBatch),
      });
  }

  async setTag(runId: string, key: string, value: string): Promise<void> {
    await this.request('POST', '/api/2.0/mlflow/runs/set-tag', { run_id: runId, key, value });
  }

  /** Ends the run: FINISHED, FAILED or KILLED, at `endTime` (ms). */
  async endRun(runId: string, status: 'FINISHED' | 'FAILED' | 'KILLED', endTime: number): Promise<void> {
    await this.request('POST', '/api/2.0/mlflow/runs/update', { run_id: runId, status, end_time: endTime });
  }

  /**
   * The proxy path of `file` under the run's artifact root (`mlflow-artifacts:/<exp>/<run>/artifacts`).
   * @throws Error when the server does not proxy artifacts (its root is s3://, a local path, ...)
   */
  artifactPath(run: MlflowRun, file: string): string {
    const root = /^mlflow-artifacts:(?:\/\/[^/]*)?\/?(.*)$/.exec(run.info.artifact_uri)?.[1];
    if (root === undefined)
      throw new Error(
        `the MLflow run's artifact root is ${run.info.artifact_uri}; starpo uploads through the server's artifact proxy: start the server with --serve-artifacts (the default) and without --default-artifact-root`,
      );
    return `/api/2.0/mlflow-artifacts/artifacts/${[...root.split('/'), ...file.split('/')]
      .filter((p) => p)
      .map(encodeURIComponent)
      .join('/')}`;
  }

  /** Uploads `file` (a path under the run's artifacts) with the given content; an existing one is replaced. */
  async putArtifact(run: MlflowRun, file: string, content: string, contentType: string): Promise<void> {
    await this.request('PUT', this.artifactPath(run, file), Buffer.from(content, 'utf8'), contentType);
  }
}

/** A tag's value on a run as the server described it, or undefined. */
export function tagOf(run: MlflowRun, key: string): string | undefined {
  return run.data.tags?.find((t) => t.key === key)?.value;
}
