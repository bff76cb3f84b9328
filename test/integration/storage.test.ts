/**
 * The object store against a real S3 server (test/helpers/servers.ts): verified round trips,
 * jsonl.gz, checkpoints with manifests, corruption detection and falling back to an older checkpoint.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { readCheckpoint, readLatest, readLatestComplete, writeCheckpoint, writeLatest } from '../../src/storage/checkpoint';
import { CorruptObjectError, ObjectNotFoundError } from '../../src/storage/errors';
import { checkpointPrefix, latestKey, rolloutKey } from '../../src/storage/keys';
import { ObjectStore, sha256Hex } from '../../src/storage/object_store';
import { Rng } from '../../src/util/rng';
import { startTestServers, type TestServers } from '../helpers/servers';

let servers: TestServers;
let store: ObjectStore;
const runId = `it-${process.pid}`;
const enc = (s: string) => new TextEncoder().encode(s);

before(async () => {
  servers = await startTestServers();
  store = new ObjectStore(servers.endpoints.s3);
  await store.ensureBucket();
  await store.ensureBucket(); // idempotent
});
after(async () => {
  await servers?.stop();
});

/** Deterministic pseudo-random bytes (a stand-in for weights). */
function bytes(n: number, seed: number): Uint8Array {
  const rng = new Rng('storage-test', seed);
  return Uint8Array.from({ length: n }, () => rng.nextUint32() & 255);
}

test('put/get verifies sha256; exists, list, json, remove', async () => {
  const data = bytes(100_000, 1);
  const ref = await store.put(`runs/${runId}/blob.bin`, data);
  assert.deepEqual(ref, { bucket: servers.endpoints.s3.bucket, key: `runs/${runId}/blob.bin`, sha256: sha256Hex(data), bytes: 100_000 });
  assert.deepEqual(await store.get(ref), data);
  assert.deepEqual(await store.put(ref.key, data), ref, 'same key, same content, same ref');
  assert.equal(await store.exists(ref.key), true);
  assert.equal(await store.exists(`runs/${runId}/missing`), false);
  await assert.rejects(store.getUnverified(`runs/${runId}/missing`), ObjectNotFoundError);

  const j = await store.putJson(`runs/${runId}/x/a.json`, { a: 1, b: [1, 2] });
  assert.deepEqual(await store.getJson(j), { a: 1, b: [1, 2] });
  assert.deepEqual(await store.getJson(j.key), { a: 1, b: [1, 2] });
  await store.putJson(`runs/${runId}/x/b.json`, null);
  assert.deepEqual(
    (await store.list(`runs/${runId}/x/`)).map((o) => o.key),
    [`runs/${runId}/x/a.json`, `runs/${runId}/x/b.json`],
  );
  await store.remove(`runs/${runId}/x/b.json`);
  assert.equal(await store.exists(`runs/${runId}/x/b.json`), false);
});

test('jsonl.gz round trip (trajectories)', async () => {
  const rows = [
    { tokens: [1, 2, 3], mask: [0, 1, 1], text: 'héllo\n"quoted"', reward: -0.5 },
    { tokens: [], mask: [], text: '', reward: 1 },
  ];
  const key = rolloutKey(runId, 3, 'train', 2);
  const ref = await store.putJsonlGz(key, rows);
  assert.deepEqual(await store.getJsonlGz(ref), rows);
  assert.deepEqual(await store.putJsonlGz(key, rows), ref, 'rewriting the same rows gives the same bytes');
  assert.deepEqual(await store.getJsonlGz(await store.putJsonlGz(`${key}.empty`, [])), []);
});

test('checkpoint: manifest written last, read back verified, rewrite is idempotent', async () => {
  const prefix = checkpointPrefix(runId, 1);
  const files = { 'model.safetensors': bytes(50_000, 2), 'config.json': enc('{"d":64}'), 'trainer_state.json': enc('{"step":1}') };
  const ref = await writeCheckpoint(store, prefix, files, { step: 1 });
  assert.equal(ref.key, `${prefix}manifest.json`);
  const loaded = await readCheckpoint(store, ref);
  assert.deepEqual(loaded.files, files);
  assert.deepEqual(loaded.manifest.meta, { step: 1 });
  assert.deepEqual(
    loaded.manifest.objects.map((o) => o.name),
    ['config.json', 'model.safetensors', 'trainer_state.json'],
  );
  for (const o of loaded.manifest.objects) assert.equal(o.sha256, sha256Hex(files[o.name as keyof typeof files]));
  assert.deepEqual(await writeCheckpoint(store, prefix, files, { step: 1 }), ref, 'retry returns the same manifest ref');
  assert.deepEqual((await readCheckpoint(store, ref.key)).ref, ref);
  await assert.rejects(writeCheckpoint(store, prefix, { 'manifest.json': enc('x') }, {}), /file name "manifest.json" is invalid/);
});

test('a corrupted object is detected with CorruptObjectError naming the key', async () => {
  const prefix = checkpointPrefix(runId, 2);
  const ref = await writeCheckpoint(store, prefix, { 'model.safetensors': bytes(1000, 3), 'config.json': enc('{}') }, { step: 2 });
  await store.put(`${prefix}model.safetensors`, bytes(1000, 4)); // same length, different bytes
  await assert.rejects(readCheckpoint(store, ref), (err: Error) => {
    assert.ok(err instanceof CorruptObjectError);
    assert.equal(err.key, `${prefix}model.safetensors`);
    assert.match(err.message, /expected sha256 [0-9a-f]{64}, got sha256 [0-9a-f]{64}/);
    return true;
  });
  const small = await store.put(`runs/${runId}/small.bin`, enc('abc'));
  await store.put(small.key, enc('abcd'));
  await assert.rejects(store.get(small), /expected 3 bytes .* got 4 bytes/);
});

test('readLatestComplete falls back to the previous complete checkpoint', async () => {
  const run = `${runId}-fallback`;
  const logs: string[] = [];
  assert.equal(await readLatestComplete(store, run, (l) => logs.push(l)), null);
  assert.equal(await readLatest(store, run), null);

  const ck = async (step: number) =>
    writeCheckpoint(store, checkpointPrefix(run, step), { 'model.safetensors': bytes(2000, step) }, { step });
  const r10 = await ck(10);
  await writeLatest(store, run, r10, 10);
  const r20 = await ck(20);
  await writeLatest(store, run, r20, 20);
  // An incomplete step 30 (objects but no manifest) must never be picked.
  await store.put(`${checkpointPrefix(run, 30)}model.safetensors`, bytes(10, 30));

  const ok = await readLatestComplete(store, run);
  assert.equal(ok?.step, 20);
  assert.deepEqual(ok?.ref, r20);

  await store.put(`${checkpointPrefix(run, 20)}model.safetensors`, bytes(2000, 99)); // corrupt step 20
  logs.length = 0;
  const fb = await readLatestComplete(store, run, (l) => logs.push(l));
  assert.equal(fb?.step, 10);
  assert.deepEqual(fb?.ref, r10);
  assert.deepEqual(fb?.files['model.safetensors'], bytes(2000, 10));
  assert.ok(
    logs.some((l) => /step 20/.test(l) && /corrupt/.test(l)),
    logs.join('\n'),
  );

  await store.remove(latestKey(run)); // latest.json missing: newest complete checkpoint that verifies
  logs.length = 0;
  const noLatest = await readLatestComplete(store, run, (l) => logs.push(l));
  assert.equal(noLatest?.step, 10);
  assert.ok(
    logs.some((l) => /no runs\/.*latest\.json/.test(l)),
    logs.join('\n'),
  );
});
