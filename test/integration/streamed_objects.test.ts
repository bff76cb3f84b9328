/**
 * Streamed objects against a real S3 server: a multipart write hashed on the stream, a read into a sink verified
 * on the stream, a corrupted object refused, and a write after a killed writer's half-done upload.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ObjectSink, StreamedObject } from '../../src/contract';
import { CorruptObjectError } from '../../src/storage/errors';
import { ObjectStore, sha256Hex } from '../../src/storage/object_store';
import { Rng } from '../../src/util/rng';
import { startTestServers, type TestServers } from '../helpers/servers';

let servers: TestServers;
let store: ObjectStore;
const prefix = `streamed-${process.pid}`;
const MiB = 1024 * 1024;

before(async () => {
  servers = await startTestServers();
  store = new ObjectStore(servers.endpoints.s3);
  await store.ensureBucket();
});
after(async () => {
  await servers?.stop();
});

/** 40 MiB: 8 MiB of noise, 24 MiB of zeros (whole parts alike, as zero moments are), 8 MiB of noise. */
function sample(): Uint8Array {
  const data = new Uint8Array(40 * MiB);
  const rng = new Rng('streamed-objects', 1);
  const words = new Uint32Array(data.buffer);
  for (let i = 0; i < 2 * MiB; i++) words[i] = rng.nextUint32();
  for (let i = 8 * MiB; i < 10 * MiB; i++) words[i] = rng.nextUint32();
  return data;
}

/** `data` as a stream of pieces of `piece` bytes (views, as a safetensors writer yields them). */
function streamOf(data: Uint8Array, piece: number, declared = data.length): StreamedObject {
  return {
    bytes: declared,
    async *chunks() {
      for (let at = 0; at < data.length; at += piece) yield data.subarray(at, at + piece);
    },
  };
}

/** A sink keeping what it is given, and the sinks made (one per read attempt). */
function collector(): { sink: () => ObjectSink; bytes: () => Uint8Array } {
  let parts: Uint8Array[] = [];
  return {
    sink: () => {
      parts = [];
      return { write: (chunk) => parts.push(new Uint8Array(chunk)) };
    },
    bytes: () => new Uint8Array(Buffer.concat(parts)),
  };
}

test('a streamed object is written in parts with the sha256 of its bytes and read back into a sink, verified', async () => {
  const data = sample();
  const ref = await store.putStreamed(`${prefix}/big.bin`, streamOf(data, 3 * MiB + 5));
  assert.deepEqual(ref, { bucket: servers.endpoints.s3.bucket, key: `${prefix}/big.bin`, sha256: sha256Hex(data), bytes: data.length });
  const read = collector();
  await store.readInto(ref, read.sink);
  assert.deepEqual(read.bytes(), data);
  assert.deepEqual(await store.get(ref), data, 'a whole read agrees');
  // Smaller than a part: one PUT.
  const small = await store.putStreamed(`${prefix}/small.bin`, streamOf(data.subarray(0, 1000), 64));
  assert.deepEqual(await store.get(small), data.subarray(0, 1000));
});

test('a corrupted streamed object is refused with CorruptObjectError naming the key, even when the sink refused it first', async () => {
  const data = sample();
  const ref = await store.putStreamed(`${prefix}/bad.bin`, streamOf(data, 4 * MiB));
  const damaged = data.slice();
  damaged[20 * MiB] = 1;
  await store.putStreamed(ref.key, streamOf(damaged, 4 * MiB));
  await assert.rejects(store.readInto(ref, collector().sink), (err: Error) => {
    assert.ok(err instanceof CorruptObjectError, String(err));
    assert.equal(err.key, ref.key);
    assert.match(err.message, /sha256 mismatch\): expected sha256 [0-9a-f]{64}, got sha256 [0-9a-f]{64}/);
    return true;
  });
  const refusing = () => ({
    write: () => {
      throw new Error('not a safetensors header');
    },
  });
  await assert.rejects(store.readInto(ref, refusing), CorruptObjectError);
  await assert.rejects(store.readInto({ ...ref, sha256: sha256Hex(damaged) }, refusing), /not a safetensors header/);
});

test("a write after a killed writer's half-done upload aborts it and stores the new bytes; a short stream stores nothing", async () => {
  const key = `${prefix}/resumed.bin`;
  const data = sample();
  // What a writer killed after two parts leaves behind: an open upload holding parts of other bytes.
  const id = await store.client.initiateNewMultipartUpload(store.bucket, key, {});
  for (const part of [1, 2]) {
    await store.client.uploadPart(
      { bucketName: store.bucket, objectName: key, uploadID: id, partNumber: part, headers: {} },
      Buffer.alloc(16 * MiB, part),
    );
  }
  const ref = await store.putStreamed(key, streamOf(data, 8 * MiB));
  assert.deepEqual(await store.get(ref), data);
  assert.equal(await store.client.findUploadId(store.bucket, key), undefined, 'no upload left open');

  const short = `${prefix}/short.bin`;
  await assert.rejects(store.putStreamed(short, streamOf(data, 8 * MiB, data.length + 1)), /gave 41943040 bytes, it declared 41943041/);
  assert.equal(await store.exists(short), false);
  assert.equal(await store.client.findUploadId(store.bucket, short), undefined, 'the failed upload was aborted');

  // A stream longer than it declared is refused before it overruns the buffer sized to the declared bytes.
  const long = `${prefix}/long.bin`;
  await assert.rejects(store.putStreamed(long, streamOf(data.subarray(0, 1000), 300, 999)), /gave more than the 999 bytes it declared/);
  assert.equal(await store.exists(long), false);
});
