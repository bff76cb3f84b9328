/**
 * The object store: content-addressed reads and writes over the `minio` client against any S3 server
 * (MinIO, SeaweedFS, AWS). Every write returns an ObjectRef `{bucket, key, sha256, bytes}`; `get(ref)`
 * verifies length and sha256 (docs/design.md, "The object store"). Writes are idempotent: same key, same bytes.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import * as Minio from 'minio';
import type { S3Endpoint } from '../../infra/types';
import type { ObjectRef, ObjectSink, StreamedObject } from '../contract';
import { CorruptObjectError, ObjectNotFoundError } from './errors';

const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);

/** One listed object: key and size in bytes. */
export interface ListedObject {
  key: string;
  bytes: number;
  /** When the object was last written (what the server lists). */
  lastModified?: Date;
}

/** Lower-case hex sha256 of `data`. */
export function sha256Hex(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** true for S3 "no such object" errors of the minio client. */
function isNotFound(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'NoSuchKey' || code === 'NotFound' || code === 'NoSuchObject';
}

/** true for errors worth one more try: connection drops and 5xx answers (the minio client reports some only in the message). */
function isTransient(err: unknown): boolean {
  const e = err as { code?: string; statusCode?: number; message?: string };
  return (
    ['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'SlowDown', 'InternalError', 'ServiceUnavailable'].includes(e.code ?? '') ||
    (typeof e.statusCode === 'number' && e.statusCode >= 500) ||
    /Retryable HTTP status: 5\d\d|socket hang up|ECONNRESET/.test(e.message ?? '')
  );
}

/** Runs `fn` up to 4 times, waiting 0.2, 0.6, 1.8 s between transient failures. Only for idempotent calls. */
async function withRetry<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= 3 || !isTransient(err)) throw err;
      await new Promise((r) => setTimeout(r, 200 * 3 ** attempt));
    }
  }
}

/**
 * Part size of the multipart uploads of streamed objects: what a streamed write holds in memory (twice: one part
 * uploading while the next fills). S3 allows parts of 5 MiB to 5 GiB and 10,000 parts: objects up to 160 GiB.
 */
const PART_BYTES = 16 * 1024 * 1024;

/** Reads a stream of chunks into one Uint8Array. */
async function collect(stream: NodeJS.ReadableStream): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return new Uint8Array(Buffer.concat(chunks));
}

/** @throws CorruptObjectError when `bytes` and `sha256` (what was read) are not what `ref` promises. */
function verify(ref: ObjectRef, bytes: number, sha256: string): void {
  if (bytes !== ref.bytes) {
    throw new CorruptObjectError(
      ref.key,
      `${ref.bytes} bytes (sha256 ${ref.sha256})`,
      `${bytes} bytes (sha256 ${sha256})`,
      'size and sha256 mismatch',
    );
  }
  if (sha256 !== ref.sha256) throw new CorruptObjectError(ref.key, `sha256 ${ref.sha256}`, `sha256 ${sha256}`, 'sha256 mismatch');
}

/** Objects of one bucket on one S3 endpoint. Credentials stay in this process (never in Temporal history). */
export class ObjectStore {
  /** The underlying `minio` client. */
  readonly client: Minio.Client;
  /** Bucket all keys live in. */
  readonly bucket: string;

  /**
   * @param endpoint where the S3 server is (see infra/types.ts S3Endpoint); region defaults to us-east-1. Over
   *   https the client uses Node's global agent, which trusts the system CAs and those of NODE_EXTRA_CA_CERTS.
   */
  constructor(readonly endpoint: S3Endpoint) {
    this.bucket = endpoint.bucket;
    this.client = new Minio.Client({
      endPoint: endpoint.endPoint,
      port: endpoint.port,
      useSSL: endpoint.useSSL,
      accessKey: endpoint.accessKey,
      secretKey: endpoint.secretKey,
      region: endpoint.region ?? 'us-east-1',
      sessionToken: endpoint.sessionToken,
    });
  }

  /** Creates the bucket when missing. Idempotent. */
  async ensureBucket(): Promise<void> {
    if (await withRetry(() => this.client.bucketExists(this.bucket))) return;
    try {
      await this.client.makeBucket(this.bucket, this.endpoint.region ?? 'us-east-1');
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code !== 'BucketAlreadyOwnedByYou' && code !== 'BucketAlreadyExists') throw err;
    }
  }

  /** Writes `data` at `key` (overwriting) and returns its reference. */
  async put(key: string, data: Uint8Array, contentType = 'application/octet-stream'): Promise<ObjectRef> {
    const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    await withRetry(() => this.client.putObject(this.bucket, key, buf, buf.length, { 'Content-Type': contentType }));
    return { bucket: this.bucket, key, sha256: sha256Hex(data), bytes: data.byteLength };
  }

  /**
   * Writes a streamed object at `key` (overwriting) and returns its reference, the sha256 computed on the stream.
   * Only PART_BYTES-sized parts are held: one smaller than a part is one PUT, a bigger one a multipart upload
   * (each part retried on its own, the upload aborted when the write fails). An upload a killed writer left for
   * this key is aborted first, not resumed. The `minio` client's putObject of a stream buffers parts of 64 MiB and
   * more (576 MiB when the size is not given) and resumes a left upload by matching part etags.
   * @throws Error when the stream yields more or fewer than `body.bytes` bytes, or from the S3 server
   */
  async putStreamed(key: string, body: StreamedObject, contentType = 'application/octet-stream'): Promise<ObjectRef> {
    const hash = createHash('sha256');
    // An object smaller than a part (a small model's weights) needs one buffer of its own size, not two parts.
    const parts = [Buffer.allocUnsafe(Math.min(PART_BYTES, body.bytes)), Buffer.allocUnsafe(body.bytes > PART_BYTES ? PART_BYTES : 0)];
    let fill = 0;
    let total = 0;
    let uploadId: string | null = null;
    const etags: Array<{ part: number; etag: string }> = [];
    let uploading: Promise<void> = Promise.resolve();
    const upload = async (data: Buffer) => {
      uploadId ??= await this.startUpload(key, contentType);
      const part = etags.length + 1;
      etags.push({ part, etag: '' });
      const id = uploadId;
      const res = await withRetry(() =>
        this.client.uploadPart({ bucketName: this.bucket, objectName: key, uploadID: id, partNumber: part, headers: {} }, data),
      );
      etags[part - 1] = { part, etag: res.etag };
    };
    try {
      for await (const chunk of body.chunks()) {
        hash.update(chunk);
        total += chunk.length;
        if (total > body.bytes) throw new Error(`streamed object ${key}: the stream gave more than the ${body.bytes} bytes it declared`);
        for (let at = 0; at < chunk.length; ) {
          const take = Math.min(PART_BYTES - fill, chunk.length - at);
          parts[0].set(chunk.subarray(at, at + take), fill);
          fill += take;
          at += take;
          if (fill < PART_BYTES) continue;
          await uploading; // the other buffer is free again
          const full = parts[0];
          uploading = upload(full);
          uploading.catch(() => undefined); // seen at the next await; until then not an unhandled rejection
          parts.reverse();
          fill = 0;
        }
      }
      if (total !== body.bytes) throw new Error(`streamed object ${key}: the stream gave ${total} bytes, it declared ${body.bytes}`);
      await uploading;
      const rest = parts[0].subarray(0, fill);
      if (uploadId === null) {
        await withRetry(() => this.client.putObject(this.bucket, key, rest, rest.length, { 'Content-Type': contentType }));
      } else {
        if (fill > 0) await upload(rest);
        const id: string = uploadId;
        await withRetry(() => this.client.completeMultipartUpload(this.bucket, key, id, etags));
      }
    } catch (err) {
      await uploading.catch(() => undefined);
      const id: string | null = uploadId;
      if (id !== null) await this.client.abortMultipartUpload(this.bucket, key, id).catch(() => undefined);
      throw err;
    }
    return { bucket: this.bucket, key, sha256: hash.digest('hex'), bytes: total };
  }

  /** Aborts the uploads left for `key` (by a writer that died mid-upload) and starts a new one. */
  private async startUpload(key: string, contentType: string): Promise<string> {
    for (let stale = await withRetry(() => this.client.findUploadId(this.bucket, key)); stale; ) {
      const id = stale;
      await withRetry(() => this.client.abortMultipartUpload(this.bucket, key, id));
      stale = await withRetry(() => this.client.findUploadId(this.bucket, key));
    }
    return withRetry(() => this.client.initiateNewMultipartUpload(this.bucket, key, { 'Content-Type': contentType }));
  }

  /**
   * Reads `ref` into a sink chunk by chunk, hashing the same chunks, and verifies length and sha256 at the end: no
   * buffer of the whole object. `sink()` is called once per attempt (a retried read starts a fresh one). When the
   * sink throws (say, a damaged header), the rest is still read and hashed, so damaged bytes are reported as such.
   * @throws CorruptObjectError naming the key, expected and actual; ObjectNotFoundError when missing; the sink's
   *   error when the bytes verify but the sink refuses them
   */
  async readInto(ref: ObjectRef, sink: () => ObjectSink): Promise<void> {
    let refused: unknown = null;
    const { sha256, bytes } = await this.reading(ref.bucket, ref.key, async (stream) => {
      const target = sink();
      refused = null;
      const hash = createHash('sha256');
      let n = 0;
      for await (const chunk of stream) {
        const data = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
        hash.update(data);
        n += data.length;
        if (refused === null && n <= ref.bytes) {
          try {
            target.write(data);
          } catch (err) {
            refused = err;
          }
        }
      }
      return { sha256: hash.digest('hex'), bytes: n };
    });
    verify(ref, bytes, sha256);
    if (refused !== null) throw refused;
  }

  /**
   * Reads `ref` and verifies its length (bytes) and sha256.
   * @throws CorruptObjectError naming the key, expected and actual; ObjectNotFoundError when missing.
   */
  async get(ref: ObjectRef): Promise<Uint8Array> {
    const data = await this.read(ref.bucket, ref.key);
    verify(ref, data.byteLength, sha256Hex(data));
    return data;
  }

  /** Reads `key` without verification. @throws ObjectNotFoundError when missing. */
  async getUnverified(key: string): Promise<Uint8Array> {
    return this.read(this.bucket, key);
  }

  /** The reference of what is stored at `key` now (reads the whole object to hash it). @throws ObjectNotFoundError. */
  async refOf(key: string): Promise<ObjectRef> {
    const data = await this.getUnverified(key);
    return { bucket: this.bucket, key, sha256: sha256Hex(data), bytes: data.byteLength };
  }

  /** true when an object exists at `key`. */
  async exists(key: string): Promise<boolean> {
    try {
      await withRetry(() => this.client.statObject(this.bucket, key));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** Every object whose key starts with `prefix` (recursive), sorted by key. */
  async list(prefix: string): Promise<ListedObject[]> {
    return withRetry(async () => {
      const out: ListedObject[] = [];
      for await (const item of this.client.listObjectsV2(this.bucket, prefix, true)) {
        const obj = item as { name?: string; size?: number; lastModified?: Date };
        if (obj.name) out.push({ key: obj.name, bytes: obj.size ?? 0, ...(obj.lastModified ? { lastModified: obj.lastModified } : {}) });
      }
      return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    });
  }

  /** Deletes `key`; deleting a missing key is not an error. */
  async remove(key: string): Promise<void> {
    await withRetry(() => this.client.removeObject(this.bucket, key));
  }

  /** Writes `value` as UTF-8 JSON (2-space indent, so identical values give identical bytes). */
  async putJson(key: string, value: unknown): Promise<ObjectRef> {
    const text = JSON.stringify(value, null, 2);
    if (text === undefined) throw new TypeError(`putJson(${key}): value ${String(value)} is not JSON-serialisable`);
    return this.put(key, Buffer.from(`${text}\n`, 'utf8'), 'application/json');
  }

  /** Reads JSON: verified when given a reference, unverified when given a key. @throws CorruptObjectError on bad bytes or JSON. */
  async getJson<T = unknown>(refOrKey: ObjectRef | string): Promise<T> {
    const key = typeof refOrKey === 'string' ? refOrKey : refOrKey.key;
    const data = typeof refOrKey === 'string' ? await this.getUnverified(refOrKey) : await this.get(refOrKey);
    try {
      return JSON.parse(Buffer.from(data).toString('utf8')) as T;
    } catch (err) {
      throw new CorruptObjectError(key, 'JSON', `unparsable text (${(err as Error).message})`, 'invalid JSON');
    }
  }

  /** Writes `rows` as gzip-compressed JSON lines (one row per line). @throws TypeError for a row that is not JSON-serialisable. */
  async putJsonlGz(key: string, rows: unknown[]): Promise<ObjectRef> {
    const lines = rows.map((row, i) => {
      const line = JSON.stringify(row);
      if (line === undefined) throw new TypeError(`putJsonlGz(${key}): row ${i} is not JSON-serialisable`);
      return `${line}\n`;
    });
    return this.put(key, await gzip(Buffer.from(lines.join(''), 'utf8')), 'application/gzip');
  }

  /** Reads gzip JSON lines: verified with a reference, unverified with a key. @throws CorruptObjectError on bad gzip or a bad line. */
  async getJsonlGz<T = unknown>(refOrKey: ObjectRef | string): Promise<T[]> {
    const key = typeof refOrKey === 'string' ? refOrKey : refOrKey.key;
    const data = typeof refOrKey === 'string' ? await this.getUnverified(refOrKey) : await this.get(refOrKey);
    let text: string;
    try {
      text = (await gunzip(data)).toString('utf8');
    } catch (err) {
      throw new CorruptObjectError(key, 'gzip data', `undecodable bytes (${(err as Error).message})`, 'invalid gzip');
    }
    return text
      .split('\n')
      .filter((l) => l !== '')
      .map((line, i) => {
        try {
          return JSON.parse(line) as T;
        } catch {
          throw new CorruptObjectError(
            key,
            `JSON on line ${i + 1}`,
            `unparsable text ${JSON.stringify(line.slice(0, 60))}`,
            'invalid JSON line',
          );
        }
      });
  }

  /** Reads a whole object. */
  private read(bucket: string, key: string): Promise<Uint8Array> {
    return this.reading(bucket, key, collect);
  }

  /** `consume` of the object's stream, retried as a whole on transient errors. @throws ObjectNotFoundError when missing */
  private async reading<T>(bucket: string, key: string, consume: (stream: NodeJS.ReadableStream) => Promise<T>): Promise<T> {
    try {
      return await withRetry(async () => consume(await this.client.getObject(bucket, key)));
    } catch (err) {
      if (isNotFound(err)) throw new ObjectNotFoundError(bucket, key);
      throw err;
    }
  }
}
