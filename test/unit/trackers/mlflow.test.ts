/**
 * The MLflow REST client and the params of a config (src/trackers/mlflow_client.ts, mlflow.ts) against a
 * real `mlflow server` (test/helpers/mlflow_server.ts): experiments by name, runs by tag, log-batch over
 * MLflow's per-request limits and sent twice, artifacts through the server's proxy, the server and its
 * credentials from MLflow's variables, and a server that is down.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { configParams, MLFLOW_TAGS } from '../../../src/trackers/mlflow';
import { MLFLOW_LIMITS, MlflowClient, MlflowError, type MlflowMetric, mlflowServer, tagOf } from '../../../src/trackers/mlflow_client';
import { shortRunInput } from '../../helpers/faults';
import { artifactText, type MlflowTestServer, metricHistory, metricKeys, startMlflowServer } from '../../helpers/mlflow_server';

let server: MlflowTestServer;
let client: MlflowClient;
before(async () => {
  server = await startMlflowServer();
  client = new MlflowClient(mlflowServer(server.uri, {}));
});
after(() => server?.close());

test('the server and its credentials come from tracker_kwargs or MLflow variables; a missing or non-http one is named', () => {
  assert.deepEqual(mlflowServer(undefined, { MLFLOW_TRACKING_URI: 'http://h:5000/' }), { uri: 'http://h:5000', headers: {} });
  assert.equal(mlflowServer('https://a', { MLFLOW_TRACKING_URI: 'http://b' }).uri, 'https://a', 'tracker_kwargs first');
  assert.deepEqual(mlflowServer('http://h', { MLFLOW_TRACKING_TOKEN: 't0k' }).headers, { authorization: 'Bearer t0k' });
  assert.deepEqual(mlflowServer('http://h', { MLFLOW_TRACKING_USERNAME: 'ann', MLFLOW_TRACKING_PASSWORD: 'pw' }).headers, {
    authorization: `Basic ${Buffer.from('ann:pw').toString('base64')}`,
  });
  assert.throws(() => mlflowServer(undefined, {}), /tracker_kwargs\.tracking_uri, or MLFLOW_TRACKING_URI/);
  assert.throws(() => mlflowServer('file:///tmp/mlruns', {}), /"file:\/\/\/tmp\/mlruns": allowed: an http:\/\/ or https:\/\/ URL/);
});

test('an experiment is found by name, made once when missing (a model-training experiment); a deleted one is an error saying how to restore it', async () => {
  const id = await client.experimentId('unit-exp');
  assert.equal(await client.experimentId('unit-exp'), id);
  const { experiment } = await client.request<{ experiment: { tags?: { key: string; value: string }[] } }>(
    'GET',
    `/api/2.0/mlflow/experiments/get?experiment_id=${id}`,
  );
  assert.deepEqual(
    experiment.tags?.find((t) => t.key === 'mlflow.experimentKind'),
    { key: 'mlflow.experimentKind', value: 'custom_model_development' },
    "MLflow's UI opens it on its training runs",
  );
  const gone = await client.experimentId('unit-gone');
  await client.request('POST', '/api/2.0/mlflow/experiments/delete', { experiment_id: gone });
  await assert.rejects(client.experimentId('unit-gone'), /experiment "unit-gone" is deleted; restore it/);
});

test('runs are found by their starpo.run_id tag, oldest first; log-batch splits what exceeds one request and a batch sent twice is kept once', async () => {
  const exp = await client.experimentId('unit-runs');
  const a = await client.createRun(exp, 'r-a', [{ key: MLFLOW_TAGS.runId, value: 'r-a' }]);
  await client.createRun(exp, 'r-b', [{ key: MLFLOW_TAGS.runId, value: 'r-b' }]);
  const found = await client.runsTagged(exp, MLFLOW_TAGS.runId, 'r-a');
  assert.deepEqual(
    found.map((r) => r.info.run_id),
    [a.info.run_id],
  );
  assert.deepEqual(await client.runsTagged(exp, MLFLOW_TAGS.runId, "it's-none"), []);

  // 1,500 values (over the 1,000 of one request) at 30 steps; then the same again, as a writer killed before its cursor would
  const metrics: MlflowMetric[] = [];
  for (let step = 0; step < 30; step++)
    for (let k = 0; k < 50; k++)
      metrics.push({ key: `env/m${k}`, value: step * 0.1 + k * 1e-9, timestamp: 1_700_000_000_000 + step, step });
  assert.ok(metrics.length > MLFLOW_LIMITS.metricsPerBatch);
  await client.logBatch(a.info.run_id, { metrics });
  await client.logBatch(a.info.run_id, { metrics });
  const run = await client.getRun(a.info.run_id);
  assert.equal(metricKeys(run).length, 50);
  const history = await metricHistory(client, a.info.run_id, 'env/m7');
  assert.deepEqual(
    history.map((m) => [m.step, m.value]).sort((x, y) => x[0] - y[0]),
    Array.from({ length: 30 }, (_, step) => [step, step * 0.1 + 7 * 1e-9]),
    'one value per step, exactly as sent',
  );

  await client.setTag(a.info.run_id, MLFLOW_TAGS.lastStep, '29');
  assert.equal(tagOf(await client.getRun(a.info.run_id), MLFLOW_TAGS.lastStep), '29');
  await client.endRun(a.info.run_id, 'FINISHED', Date.now());
  assert.equal((await client.getRun(a.info.run_id)).info.status, 'FINISHED');
});

test("a config's params fit MLflow's limits and the server takes them; an artifact goes through the proxy and is replaced", async () => {
  const { config } = shortRunInput('unit-params', 2);
  config.exp_name = 'x'.repeat(7000);
  const params = configParams(config);
  assert.ok(params.length > MLFLOW_LIMITS.paramsTagsPerBatch, `${params.length} params`);
  const byKey = new Map(params.map((p) => [p.key, p.value]));
  assert.equal(byKey.get('exp_name')?.length, MLFLOW_LIMITS.paramValue);
  assert.equal(byKey.get('actor_train.training_args.learning_rate'), String(config.actor_train.training_args.learning_rate));
  assert.equal(byKey.get('track_with'), 'null');
  assert.equal(byKey.get('train_env_manager.tags'), JSON.stringify(config.train_env_manager.tags));

  const exp = await client.experimentId('unit-params');
  const run = await client.createRun(exp, 'p', []);
  await client.logBatch(run.info.run_id, { params });
  await client.logBatch(run.info.run_id, { params }); // the same values again: accepted
  const got = (await client.getRun(run.info.run_id)).data.params ?? [];
  assert.deepEqual(new Map(got.map((p) => [p.key, p.value])), byKey);

  await client.putArtifact(run, 'report.html', '<p>one</p>', 'text/html');
  await client.putArtifact(run, 'report.html', '<p>two</p>', 'text/html');
  assert.equal(await artifactText(client, run, 'report.html'), '<p>two</p>');
  const listed = await client.request<{ files?: Array<{ path: string }> }>(
    'GET',
    `/api/2.0/mlflow/artifacts/list?run_id=${run.info.run_id}`,
  );
  assert.deepEqual(
    listed.files?.map((f) => f.path),
    ['report.html'],
  );
  assert.throws(
    () => client.artifactPath({ ...run, info: { ...run.info, artifact_uri: 's3://bucket/0/abc' } }, 'report.html'),
    /artifact root is s3:\/\/bucket\/0\/abc; starpo uploads through the server's artifact proxy/,
  );
});

test('a server that is down is an MlflowError naming the request, at once', async () => {
  await server.stop();
  try {
    await assert.rejects(client.experimentId('unit-down'), (err: unknown) => {
      assert.ok(err instanceof MlflowError);
      assert.equal(err.code, 'UNREACHABLE');
      assert.match(err.message, /experiments\/get-by-name\?experiment_name=unit-down: no answer \(.*ECONNREFUSED/);
      return true;
    });
  } finally {
    await server.start();
  }
  assert.ok(await client.experimentId('unit-down'), 'the same store after a restart');
  assert.ok(await client.experimentId('unit-exp'));
});
