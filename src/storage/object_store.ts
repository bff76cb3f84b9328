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
import type { ObjectRef } from '../contract';
import { CorruptObjectError, ObjectNotFoundError } from './errors';

const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);

/** One listed object: key and size in bytes. */
export interface ListedObject {
  key: string;
  bytes: number;
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

/** Reads a stream of chunks into one Uint8Array. */
async function collect(stream: NodeJS.ReadableStream): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return new Uint8Array(Buffer.concat(chunks));
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
   * Reads `ref` and verifies its length (bytes) and sha256.
   * @throws CorruptObjectError naming the key, expected and actual; ObjectNotFoundError when missing.
   */
  async get(ref: ObjectRef): Promise<Uint8Array> {
    const data = await this.read(ref.bucket, ref.key);
    const actual = sha256Hex(data);
    if (data.byteLength !== ref.bytes) {
      throw new CorruptObjectError(
        ref.key,
        `${ref.bytes} bytes (sha256 ${ref.sha256})`,
        `${data.byteLength} bytes (sha256 ${actual})`,
        'size and sha256 mismatch',
      );
    }
    if (actual !== ref.sha256) throw new CorruptObjectError(ref.key, `sha256 ${ref.sha256}`, `sha256 ${actual}`, 'sha256 mismatch');
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
        const obj = item as { name?: string; size?: number };
        if (obj.name) out.push({ key: obj.name, bytes: obj.size ?? 0 });
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
  private async read(bucket: string, key: string): Promise<Uint8Array> {
    try {
      return await withRetry(async () => collect(await this.client.getObject(bucket, key)));
    } catch (err) {
      if (isNotFound(err)) throw new ObjectNotFoundError(bucket, key);
      throw err;
    }
  }
}
